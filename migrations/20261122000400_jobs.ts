import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('jobs', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('type').notNullable();
    table.text('status').notNullable().defaultTo('queued').checkIn(['queued', 'running', 'completed', 'failed', 'cancelled']);
    table.bigInteger('done').notNullable().defaultTo(0);
    table.bigInteger('total');
    table.jsonb('params');
    table.jsonb('result');
    table.text('error');
    // Set when a workflow owns the job; such a job changes only through its workflow.
    table.text('workflow_id');
    table.text('created_by');
    table.timestamps(true, true);
    table.timestamp('completed_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('jobs');
}
