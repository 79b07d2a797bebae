import type { Knex } from 'knex';
import { formatExact } from '../../domain/money';
import { appliesToOf, type ContractRow, type ContractPlanRow, type ContractTaxRow } from './contracts.repository';

export interface ContractPlanRef {
  contractId: string;
  customerId: string;
  currency: string;
}

/** The contract plan an invoice bills: its contract, that contract's customer and currency. */
export async function resolveContractPlan(db: Knex, organisationId: string, contractPlanId: string): Promise<ContractPlanRef | undefined> {
  const row = await db('contract_plans as cp')
    .join('contracts as c', 'c.id', 'cp.contract_id')
    .where({ 'cp.organisation_id': organisationId, 'cp.id': contractPlanId })
    .first<(Pick<ContractPlanRow, 'contract_id'> & Pick<ContractRow, 'customer_id' | 'currency'>) | undefined>('cp.contract_id', 'c.customer_id', 'c.currency');
  return row ? { contractId: row.contract_id, customerId: row.customer_id, currency: row.currency } : undefined;
}

export interface ContractTax {
  name: string;
  rate: string;
  appliesTo: 'all' | string[];
}

const toContractTax = (row: Pick<ContractTaxRow, 'name' | 'rate' | 'applies_to'>): ContractTax => ({ name: row.name, rate: formatExact(row.rate), appliesTo: appliesToOf(row) });

/** The taxes of each of the contracts, in one read: what `contractTaxesOf` answers for each. */
export async function contractTaxesOfMany(db: Knex, contractIds: readonly string[]): Promise<Map<string, ContractTax[]>> {
  const taxes = new Map<string, ContractTax[]>();
  if (contractIds.length === 0) return taxes;
  const rows = await db<ContractTaxRow>('contract_taxes')
    .whereIn('contract_id', [...contractIds])
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .select('contract_id', 'name', 'rate', 'applies_to');
  for (const row of rows) taxes.set(row.contract_id, [...(taxes.get(row.contract_id) ?? []), toContractTax(row)]);
  return taxes;
}

/** A contract's taxes, applied at raise: to all items, or to the invoice items of the named plan items. */
export async function contractTaxesOf(db: Knex, organisationId: string, contractId: string): Promise<ContractTax[]> {
  const rows = await db<ContractTaxRow>('contract_taxes')
    .where({ organisation_id: organisationId, contract_id: contractId })
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .select('name', 'rate', 'applies_to');
  return rows.map(toContractTax);
}
