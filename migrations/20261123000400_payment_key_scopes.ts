import type { Knex } from 'knex';

/**
 * A payment's idempotency key belongs to one of two namespaces: `client` (the Idempotency-Key header of
 * POST /payments) or `system` (the key the invoice workflow makes when an invoice is paid). A client key
 * can never collide with a system one, whatever its text.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('payments', (table) => {
    table.text('idempotency_scope');
  });
  // Until now only system keys came without a fingerprint.
  await knex.raw(`
    UPDATE payments
       SET idempotency_scope = CASE WHEN idempotency_fingerprint IS NULL THEN 'system' ELSE 'client' END
     WHERE idempotency_key IS NOT NULL`);
  await knex.raw(`
    ALTER TABLE payments ADD CONSTRAINT payments_idempotency_scope_check
      CHECK ((idempotency_key IS NULL AND idempotency_scope IS NULL) OR idempotency_scope IN ('client', 'system'))`);
  await knex.raw('DROP INDEX payments_idempotency_key_unique');
  await knex.raw(
    'CREATE UNIQUE INDEX payments_idempotency_key_unique ON payments (organisation_id, idempotency_scope, idempotency_key) WHERE idempotency_key IS NOT NULL',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX payments_idempotency_key_unique');
  await knex.raw(
    'CREATE UNIQUE INDEX payments_idempotency_key_unique ON payments (organisation_id, idempotency_key) WHERE idempotency_key IS NOT NULL',
  );
  await knex.raw('ALTER TABLE payments DROP CONSTRAINT payments_idempotency_scope_check');
  await knex.schema.alterTable('payments', (table) => {
    table.dropColumn('idempotency_scope');
  });
}
