import type { Knex } from 'knex';

/**
 * Invoice-run schedules: each row is the source of truth of one Temporal Schedule, which is rebuilt from
 * it when it is missing. A schedule has either a cron expression or a calendar, never both.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('invoice_run_schedules', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('name').notNullable();
    table.text('cron');
    // {minute, hour, dayOfMonth, month?: number[]}
    table.jsonb('calendar');
    table.text('timezone').notNullable();
    table.boolean('paused').notNullable().defaultTo(false);
    table.text('created_by');
    table.timestamps(true, true);
    table.index(['organisation_id', 'created_at']);
  });
  await knex.raw('ALTER TABLE invoice_run_schedules ADD CONSTRAINT invoice_run_schedules_one_spec_check CHECK ((cron IS NULL) <> (calendar IS NULL))');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('invoice_run_schedules');
}
