import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('payments', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('customer_id').notNullable().references('customers.id').index();
    // Plain text for now: the invoices table arrives later.
    table.text('invoice_id');
    // ISO 4217 minor units go up to 4 decimals; amounts are stored already rounded to their currency.
    table.decimal('amount', 24, 4).notNullable();
    table.string('currency', 3).notNullable();
    table.timestamp('paid_at', { useTz: true }).notNullable();
    table.text('method');
    table.text('reference');
    table.text('idempotency_key');
    // Hash of the first request's body: a key replayed with a different body is refused.
    table.text('idempotency_fingerprint');
    table.timestamps(true, true);
    table.timestamp('deleted_at', { useTz: true });
  });
  await knex.raw('ALTER TABLE payments ADD CONSTRAINT payments_amount_positive CHECK (amount > 0)');
  // Deleted payments keep their key: a replay must never create a second payment.
  await knex.raw(
    'CREATE UNIQUE INDEX payments_idempotency_key_unique ON payments (organisation_id, idempotency_key) WHERE idempotency_key IS NOT NULL',
  );
  await knex.raw('CREATE INDEX payments_invoice_idx ON payments (organisation_id, invoice_id) WHERE invoice_id IS NOT NULL');
  await knex.raw('CREATE INDEX payments_listing_idx ON payments (organisation_id, paid_at DESC, id DESC) WHERE deleted_at IS NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('payments');
}
