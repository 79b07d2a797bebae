import { contractTaxesOf, taxesInForce } from '../../src/modules/contracts';
import { useDatabaseBefore } from './support/migration-database';

/**
 * Contract taxes become versions of their lines: on a database of its own, taxes written before the
 * migration are each the first version of a line named by their own id, in force from the contract's
 * start; the step back keeps each line's latest version under the line's id.
 */
const MIGRATION = '20261208000200_contract_tax_versions.ts';
const org = { organisation_id: 'org_tax_versions' };
const database = useDatabaseBefore(MIGRATION, 'taxversions');

beforeAll(async () => {
  await database.db('organisations').insert({ id: org.organisation_id, name: 'Tax Versions Ltd' });
  await database.db('customers').insert({ ...org, id: 'cus_tax_versions', name: 'Customer' });
  await database.db('contracts').insert({ ...org, id: 'con_tax_versions', customer_id: 'cus_tax_versions', currency: 'EUR', start_date: '2026-01-01', status: 'active' });
  await database.db('contract_taxes').insert([
    { ...org, id: 'tax_vat', contract_id: 'con_tax_versions', name: 'VAT', rate: '19', applies_to: null, created_at: '2026-01-01T00:00:00Z' },
    { ...org, id: 'tax_city', contract_id: 'con_tax_versions', name: 'City', rate: '2.5', applies_to: JSON.stringify(['bpi_fee']), created_at: '2026-01-02T00:00:00Z' },
  ]);
});

it('when the migration runs over taxes written before it, then each is the first version of its own line, and the step back keeps the latest version of each line', async () => {
  await database.db.migrate.up({ name: MIGRATION });
  const migrated = await contractTaxesOf(database.db, org.organisation_id, 'con_tax_versions');
  expect(migrated).toEqual([
    { lineId: 'tax_vat', effectiveFrom: null, name: 'VAT', rate: '19', appliesTo: 'all' },
    { lineId: 'tax_city', effectiveFrom: null, name: 'City', rate: '2.5', appliesTo: ['bpi_fee'] },
  ]);
  // A version of VAT from 1 July, as a change adds it; a second version from the same day is refused by the key.
  await database.db('contract_taxes').insert({ ...org, id: 'tax_vat_july', line_id: 'tax_vat', contract_id: 'con_tax_versions', effective_from: '2026-07-01', name: 'VAT', rate: '20', applies_to: null });
  await expect(database.db('contract_taxes').insert({ ...org, id: 'tax_vat_again', line_id: 'tax_vat', contract_id: 'con_tax_versions', effective_from: '2026-07-01', name: 'VAT', rate: '21', applies_to: null })).rejects.toThrow(/contract_taxes_version/);
  const taxes = await contractTaxesOf(database.db, org.organisation_id, 'con_tax_versions');
  expect(taxesInForce(taxes, '2026-06-30').map((tax) => [tax.name, tax.rate])).toEqual([['VAT', '19'], ['City', '2.5']]);
  expect(taxesInForce(taxes, '2026-07-01').map((tax) => [tax.name, tax.rate])).toEqual([['VAT', '20'], ['City', '2.5']]);

  await database.db.migrate.down({ name: MIGRATION });
  const back = await database.db('contract_taxes').where(org).orderBy('id').select('id', 'name', 'rate');
  expect(back.map((row: { id: string; rate: string }) => [row.id, Number(row.rate)])).toEqual([
    ['tax_city', 2.5],
    ['tax_vat', 20],
  ]);
});
