import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('fsm_machines', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('object_type').notNullable().checkIn(['invoice', 'contract']);
    table.text('name').notNullable();
    // [{name, builtIn}]: each custom state stands for one built-in state.
    table.jsonb('states').notNullable();
    // [{action, from, to, effect}]: each custom transition runs one built-in action.
    table.jsonb('transitions').notNullable();
    table.timestamps(true, true);
    table.unique(['organisation_id', 'object_type', 'name']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('fsm_machines');
}
