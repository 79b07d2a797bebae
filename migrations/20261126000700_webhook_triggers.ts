import type { Knex } from 'knex';

/**
 * What POST /webhooks/trigger checks before it sends an object's current state as an event:
 * - events it sends name the object they carry, so that a repeat of the same type for the same object
 *   within 24 hours finds the first event and answers its id (its webhook-id) rather than sending another;
 * - a contract records when it was last resumed, so that `contract.resumed` is sent only for a contract
 *   that was (a suspension of less than a day leaves no row in contract_suspensions). Contracts resumed
 *   before this migration get the day after their last closed suspension.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_events', (table) => {
    table.text('triggered_object_id');
  });
  await knex.raw('CREATE INDEX webhook_events_triggered ON webhook_events (organisation_id, type, triggered_object_id, created_at) WHERE triggered_object_id IS NOT NULL');
  await knex.schema.alterTable('contracts', (table) => {
    table.timestamp('resumed_at', { useTz: true });
  });
  await knex.raw(`
    UPDATE contracts c SET resumed_at = s.last_day + 1
      FROM (SELECT contract_id, max(to_date) AS last_day FROM contract_suspensions WHERE to_date IS NOT NULL GROUP BY contract_id) s
     WHERE s.contract_id = c.id`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contracts', (table) => {
    table.dropColumn('resumed_at');
  });
  await knex.raw('DROP INDEX webhook_events_triggered');
  await knex.schema.alterTable('webhook_events', (table) => {
    table.dropColumn('triggered_object_id');
  });
}
