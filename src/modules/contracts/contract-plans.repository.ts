import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { formatExact } from '../../domain/money';
import { appliesToOf, byEffectiveFrom, taxLines, type ContractRow, type ContractPlanRow, type ContractTaxRow } from './contracts.repository';

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

/** A version of one of a contract's tax lines: in force from `effectiveFrom` (null: the start) until the line's next. */
export interface ContractTax {
  lineId: string;
  effectiveFrom: string | null;
  name: string;
  rate: string;
  appliesTo: 'all' | string[];
}

const toContractTax = (row: ContractTaxRow): ContractTax => ({
  lineId: row.line_id,
  effectiveFrom: row.effective_from ? calendarDay(row.effective_from) : null,
  name: row.name,
  rate: formatExact(row.rate),
  appliesTo: appliesToOf(row),
});

/** Every version of the contract's tax lines: the lines in the order they were made, each line's versions in the order they take effect. */
const versionsOf = (rows: readonly ContractTaxRow[]): ContractTax[] => taxLines(rows).flatMap((line) => [...line].sort(byEffectiveFrom).map(toContractTax));

/** The taxes of each of the contracts, in one read: what `contractTaxesOf` answers for each. */
export async function contractTaxesOfMany(db: Knex, contractIds: readonly string[]): Promise<Map<string, ContractTax[]>> {
  const taxes = new Map<string, ContractTax[]>();
  if (contractIds.length === 0) return taxes;
  const rows = await db<ContractTaxRow>('contract_taxes').whereIn('contract_id', [...contractIds]);
  const byContract = new Map<string, ContractTaxRow[]>();
  for (const row of rows) byContract.set(row.contract_id, [...(byContract.get(row.contract_id) ?? []), row]);
  for (const [contractId, ofContract] of byContract) taxes.set(contractId, versionsOf(ofContract));
  return taxes;
}

/**
 * A contract's taxes, applied at raise: to all items, or to the invoice items of the named plan items; each
 * line by the version of each tax in force on its first day (`taxesInForce`).
 */
export async function contractTaxesOf(db: Knex, organisationId: string, contractId: string): Promise<ContractTax[]> {
  return versionsOf(await db<ContractTaxRow>('contract_taxes').where({ organisation_id: organisationId, contract_id: contractId }));
}

/**
 * The version of each tax line in force on `day` (a tax line none of whose versions is in force yet is
 * left out); without a day, each line's last version.
 */
export function taxesInForce(taxes: readonly ContractTax[], day: string | null): ContractTax[] {
  const inForce = new Map<string, ContractTax>();
  for (const tax of taxes) {
    if (day !== null && tax.effectiveFrom !== null && tax.effectiveFrom > day) continue;
    const known = inForce.get(tax.lineId);
    if (!known || (known.effectiveFrom ?? '') <= (tax.effectiveFrom ?? '')) inForce.set(tax.lineId, tax);
  }
  return [...inForce.values()];
}
