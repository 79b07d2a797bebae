import type { Knex } from 'knex';

/**
 * What an invoice leaves owing: its total, less the customer's credit applied when it was raised
 * (`credits_applied`) and less the credit notes that lowered it before it was paid (`credited_due`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('invoices', (table) => {
    table.decimal('credits_applied', 24, 4).notNullable().defaultTo(0);
    table.decimal('credited_due', 24, 4).notNullable().defaultTo(0);
  });
  await knex.raw(`
    UPDATE invoices SET credited_due = notes.total
      FROM (SELECT invoice_id, sum(total) AS total FROM credit_notes WHERE status = 'issued' AND settlement = 'reduces_due' GROUP BY invoice_id) notes
     WHERE notes.invoice_id = invoices.id`);
  await knex.raw('ALTER TABLE invoices ADD CONSTRAINT invoices_amount_due_check CHECK (credits_applied >= 0 AND credited_due >= 0)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('invoices', (table) => {
    table.dropChecks(['invoices_amount_due_check']);
    table.dropColumn('credits_applied');
    table.dropColumn('credited_due');
  });
}
