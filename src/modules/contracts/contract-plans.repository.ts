import type { Knex } from 'knex';
import { toDecimal } from '../../domain/money';

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
    .first<{ contract_id: string; customer_id: string; currency: string } | undefined>('cp.contract_id', 'c.customer_id', 'c.currency');
  return row ? { contractId: row.contract_id, customerId: row.customer_id, currency: row.currency } : undefined;
}

export interface ContractTax {
  name: string;
  rate: string;
  appliesTo: 'all' | string[];
}

/** A contract's taxes, applied at raise: to all items, or to the invoice items of the named plan items. */
export async function contractTaxesOf(db: Knex, organisationId: string, contractId: string): Promise<ContractTax[]> {
  const rows = await db('contract_taxes')
    .where({ organisation_id: organisationId, contract_id: contractId })
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .select<Array<{ name: string; rate: string; applies_to: unknown }>>('name', 'rate', 'applies_to');
  return rows.map((row) => ({ name: row.name, rate: toDecimal(row.rate).toFixed(), appliesTo: Array.isArray(row.applies_to) ? (row.applies_to as string[]) : 'all' }));
}
