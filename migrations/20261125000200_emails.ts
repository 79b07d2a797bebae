import type { Knex } from 'knex';

/**
 * E-mail: the organisation's templates (one of each built-in kind at most, any number of custom ones) and
 * every message sent through `POST /emails`, rendered when it was asked for, with its delivery status.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('email_templates', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('name').notNullable();
    table.text('kind').notNullable();
    table.text('subject').notNullable();
    table.text('html').notNullable();
    table.text('text');
    table.timestamps(true, true);
    table.unique(['organisation_id', 'name']);
    table.index(['organisation_id', 'created_at']);
  });
  await knex.raw("ALTER TABLE email_templates ADD CONSTRAINT email_templates_kind_check CHECK (kind IN ('invoice', 'reminder', 'custom'))");
  // Invoice delivery and reminders use the organisation's template of their kind: there is one or none.
  await knex.raw("CREATE UNIQUE INDEX email_templates_one_per_kind ON email_templates (organisation_id, kind) WHERE kind IN ('invoice', 'reminder')");

  await knex.schema.createTable('emails', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    // The template it was rendered from, kept as a plain id: deleting the template keeps the message.
    table.text('template_id');
    table.jsonb('to').notNullable();
    table.text('subject').notNullable();
    table.text('html').notNullable();
    table.text('text');
    // Its PDF is attached when the message is sent.
    table.text('invoice_id').references('invoices.id').onDelete('SET NULL');
    table.text('status').notNullable().defaultTo('queued');
    table.text('message_id').notNullable();
    table.integer('attempts').notNullable().defaultTo(0);
    table.text('error');
    table.timestamp('sent_at', { useTz: true });
    table.text('created_by');
    table.timestamps(true, true);
    table.index(['organisation_id', 'created_at']);
  });
  await knex.raw("ALTER TABLE emails ADD CONSTRAINT emails_status_check CHECK (status IN ('queued', 'sent', 'failed'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('emails');
  await knex.schema.dropTable('email_templates');
}
