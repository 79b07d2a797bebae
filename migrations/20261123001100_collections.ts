import type { Knex } from 'knex';

/**
 * Collections: payment terms per customer (the organisation's apply when a customer has none), an
 * invoice's due date fixed when it is raised, the organisation's reminder schedule in days after the due
 * date, and the reminders sent, one per invoice and step of that schedule.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('customers', (table) => {
    table.integer('payment_terms_days');
  });
  await knex.raw('ALTER TABLE customers ADD CONSTRAINT customers_payment_terms_check CHECK (payment_terms_days BETWEEN 0 AND 365)');

  await knex.schema.alterTable('organisation_settings', (table) => {
    table.specificType('dunning_schedule_days', 'integer[]').notNullable().defaultTo(knex.raw("'{1,7,14}'"));
  });
  // Ascending order is checked by the API; the column refuses what no schedule may hold.
  await knex.raw(
    'ALTER TABLE organisation_settings ADD CONSTRAINT organisation_settings_dunning_schedule_check CHECK (cardinality(dunning_schedule_days) <= 10 AND 1 <= ALL (dunning_schedule_days) AND 365 >= ALL (dunning_schedule_days))',
  );

  await knex.schema.alterTable('invoices', (table) => {
    table.date('due_date');
  });
  // Invoices raised before due dates existed get theirs from the organisation's terms, so ageing sees them.
  await knex.raw(`
    UPDATE invoices SET due_date = invoices.date + COALESCE(
      (SELECT payment_terms_days FROM organisation_settings s WHERE s.organisation_id = invoices.organisation_id), 30)
    WHERE status <> 'draft'`);
  await knex.raw("CREATE INDEX invoices_collectible_idx ON invoices (organisation_id, due_date) WHERE status IN ('raised', 'sent') AND deleted_at IS NULL");

  await knex.schema.createTable('invoice_reminders', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('invoice_id').notNullable().references('invoices.id').onDelete('CASCADE');
    table.integer('days_after_due').notNullable();
    // The addresses the reminder went to; empty when the customer had no contacts.
    table.jsonb('sent_to').notNullable().defaultTo('[]');
    table.text('message_id').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // A retried reminder finds its row and sends nothing more.
    table.unique(['invoice_id', 'days_after_due']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('invoice_reminders');
  await knex.raw('DROP INDEX invoices_collectible_idx');
  await knex.schema.alterTable('invoices', (table) => table.dropColumn('due_date'));
  await knex.schema.alterTable('organisation_settings', (table) => table.dropColumn('dunning_schedule_days'));
  await knex.schema.alterTable('customers', (table) => table.dropColumn('payment_terms_days'));
}
