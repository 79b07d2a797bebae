import type { Knex } from 'knex';

/**
 * Credit that expires. Every credit added to a balance is a lot, with what is left of it and when it
 * expires; taking credit draws from the lots that expire first, and each ledger entry records the lots it
 * drew from or gave back to (`draws`), so that an invoice's credit, given back, returns to its own lots
 * and keeps their expiry. The ledger stays append-only; the lots say where the balance sits.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('credit_lots', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('customer_id').notNullable().references('customers.id').onDelete('CASCADE');
    table.string('currency', 3).notNullable();
    table.decimal('amount', 24, 4).notNullable();
    table.decimal('remaining', 24, 4).notNullable();
    table.timestamp('expires_at', { useTz: true });
    table.timestamp('expired_at', { useTz: true });
    // The ledger entry that added it.
    table.text('entry_id').references('credit_ledger.id').onDelete('SET NULL');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('ALTER TABLE credit_lots ADD CONSTRAINT credit_lots_remaining_check CHECK (remaining >= 0 AND remaining <= amount AND amount > 0)');
  // The lots a draw reads, in the order it takes them.
  await knex.raw(
    'CREATE INDEX credit_lots_open_idx ON credit_lots (organisation_id, customer_id, currency, expires_at NULLS LAST, created_at, id) WHERE remaining > 0',
  );

  await knex.schema.alterTable('credit_ledger', (table) => {
    // [{lotId, amount}], signed as the entry: what it took from each lot, or gave back to it.
    table.jsonb('draws');
  });

  // What balances hold today becomes one lot each, without expiry.
  await knex.raw(`
    INSERT INTO credit_lots (id, organisation_id, customer_id, currency, amount, remaining)
    SELECT 'clt_' || md5(organisation_id || customer_id || currency), organisation_id, customer_id, currency, balance, balance
      FROM credit_balances WHERE balance > 0`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('credit_ledger', (table) => {
    table.dropColumn('draws');
  });
  await knex.schema.dropTable('credit_lots');
}
