import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('meters', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('name').notNullable();
    table.text('metric').notNullable();
    table.text('aggregation').notNullable().checkIn(['sum', 'count', 'max', 'unique_count', 'latest']);
    table.text('unique_field');
    table.timestamps(true, true);
    table.unique(['organisation_id', 'name']);
  });
  await knex.raw("ALTER TABLE meters ADD CONSTRAINT meters_unique_field_required CHECK (aggregation <> 'unique_count' OR unique_field IS NOT NULL)");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('meters');
}
