import type { Knex } from 'knex';

/**
 * Each running worker stamps its row every few seconds, so that /health can tell within seconds that no
 * worker serves a task queue. Times come from Postgres's clock, never the hosts'.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('worker_heartbeats', (table) => {
    table.text('task_queue').notNullable();
    table.text('identity').notNullable();
    table.text('host').notNullable();
    table.integer('pid').notNullable();
    table.timestamp('started_at', { useTz: true }).notNullable();
    table.timestamp('beat_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.primary(['task_queue', 'identity']);
    table.index(['task_queue', 'beat_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('worker_heartbeats');
}
