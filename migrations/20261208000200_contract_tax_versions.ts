import type { Knex } from 'knex';

/**
 * A contract's tax line becomes effective-dated history: each row is a version of its line (`line_id`, the
 * id the API names the line by), in force from `effective_from` (null: from the contract's start) until
 * the next version of the line. A change adds a version; the days already charged keep theirs.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contract_taxes', (table) => {
    table.text('line_id');
    table.date('effective_from');
  });
  await knex('contract_taxes').update({ line_id: knex.ref('id') });
  await knex.raw('ALTER TABLE contract_taxes ALTER COLUMN line_id SET NOT NULL');
  await knex.raw("CREATE UNIQUE INDEX contract_taxes_version ON contract_taxes (line_id, coalesce(effective_from, DATE '0001-01-01'))");
}

export async function down(knex: Knex): Promise<void> {
  // Each line keeps its latest version.
  await knex.raw(`DELETE FROM contract_taxes t WHERE EXISTS (SELECT 1 FROM contract_taxes later WHERE later.line_id = t.line_id
    AND coalesce(later.effective_from, DATE '0001-01-01') > coalesce(t.effective_from, DATE '0001-01-01'))`);
  await knex.raw('UPDATE contract_taxes SET id = line_id WHERE id <> line_id');
  await knex.raw('DROP INDEX contract_taxes_version');
  await knex.schema.alterTable('contract_taxes', (table) => {
    table.dropColumn('line_id');
    table.dropColumn('effective_from');
  });
}
