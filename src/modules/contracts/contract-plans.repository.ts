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

/** A contract's taxes, applied at raise: to all items, or to the invoice items of the named plan items. */
export async function contractTaxesOf(db: Knex, organisationId: string, contractId: string): Promise<ContractTax[]> {
  const rows = await db<ContractTaxRow>('contract_taxes')
    .where({ organisation_id: organisationId, contract_id: contractId })
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .select('name', 'rate', 'applies_to');
  return rows.map((row) => ({ name: row.name, rate: formatExact(row.rate), appliesTo: appliesToOf(row) }));
}
