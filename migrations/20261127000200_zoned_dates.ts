import type { Knex } from 'knex';

/**
 * A customer may have its own time zone (IANA name), which then defines "today" and the dates stamped on
 * its documents instead of the organisation's. A credit note carries its date: the day it was issued
 * (before that, the day it was drafted) in the customer's zone, else the organisation's; existing notes
 * get that day from when they were issued or drafted.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('customers', (t) => {
    t.text('timezone');
  });
  await knex.schema.alterTable('credit_notes', (t) => {
    t.date('date');
  });
  await knex.raw(`
    UPDATE credit_notes AS note
       SET date = (coalesce(note.issued_at, note.created_at) AT TIME ZONE coalesce(
             (SELECT customer.timezone FROM customers AS customer WHERE customer.id = note.customer_id),
             (SELECT settings.timezone FROM organisation_settings AS settings WHERE settings.organisation_id = note.organisation_id),
             'UTC'))::date`);
  await knex.raw('ALTER TABLE credit_notes ALTER COLUMN date SET NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('credit_notes', (t) => {
    t.dropColumn('date');
  });
  await knex.schema.alterTable('customers', (t) => {
    t.dropColumn('timezone');
  });
}
