import type { Knex } from 'knex';

/**
 * Foreign keys that only repeat what a row's parent already guarantees are dropped: Postgres checks each
 * one per inserted row (about 4 µs each), and an invoice run inserts tens of thousands of these rows.
 * - `invoice_items.organisation_id`: the item's invoice belongs to the organisation, and deleting either
 *   cascades through `invoice_items.invoice_id`.
 * - `billed_periods.organisation_id`: likewise through `contract_plan_id` and `invoice_id`.
 * - `billed_periods.invoice_run_id`: informational, like the run's id on the invoice; runs are only ever
 *   deleted with their organisation, whose contract plans take these rows with them.
 * The columns stay, indexed where they were, and every query keeps filtering by organisation.
 */
const DROPPED = [
  { table: 'invoice_items', column: 'organisation_id', references: 'organisations.id', onDelete: 'CASCADE' },
  { table: 'billed_periods', column: 'organisation_id', references: 'organisations.id', onDelete: 'CASCADE' },
  { table: 'billed_periods', column: 'invoice_run_id', references: 'invoice_runs.id', onDelete: null },
] as const;

export async function up(knex: Knex): Promise<void> {
  for (const { table, column } of DROPPED) {
    await knex.schema.alterTable(table, (builder) => {
      builder.dropForeign([column]);
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const { table, column, references, onDelete } of DROPPED) {
    await knex.schema.alterTable(table, (builder) => {
      const key = builder.foreign(column).references(references);
      if (onDelete) key.onDelete(onDelete);
    });
  }
}
