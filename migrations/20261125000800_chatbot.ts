import type { Knex } from 'knex';

/**
 * The chatbot's conversations and their messages, per organisation: each question and its answer, with the
 * figures behind the answer and the API paths that give them, so that a person can check every number.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('chatbot_conversations', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    // The app (client credentials) or user that started it.
    table.text('started_by').notNullable();
    table.text('title').notNullable();
    table.integer('messages').notNullable().defaultTo(0);
    // The Idempotency-Key of the request that started it: a retry finds the same conversation.
    table.text('start_key');
    table.timestamps(true, true);
    table.index(['organisation_id', 'updated_at']);
    table.unique(['organisation_id', 'started_by', 'start_key']);
  });

  await knex.schema.createTable('chatbot_messages', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('conversation_id').notNullable().references('chatbot_conversations.id').onDelete('CASCADE');
    table.integer('seq').notNullable();
    table.text('role').notNullable();
    table.text('text').notNullable();
    table.jsonb('data');
    table.jsonb('sources').notNullable().defaultTo('[]');
    table.text('intent');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // One question and one answer per turn: a retried step finds the message it wrote.
    table.unique(['conversation_id', 'seq']);
  });
  await knex.raw("ALTER TABLE chatbot_messages ADD CONSTRAINT chatbot_messages_role_check CHECK (role IN ('user', 'assistant'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('chatbot_messages');
  await knex.schema.dropTable('chatbot_conversations');
}
