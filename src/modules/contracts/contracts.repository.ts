import type { Knex } from 'knex';
import type { z } from 'zod';
import { calendarDay } from '../../db/dates';
import { newId } from '../../db/ids';
import type { ContractState } from '../../domain/contract-state';
import { formatExactOrNull } from '../../domain/money';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { contractSchema, milestoneSchema, taxSchema } from './contracts.schemas';

export type Contract = z.output<typeof contractSchema>;

export interface ContractRow {
  id: string;
  organisation_id: string;
  customer_id: string;
  name: string | null;
  currency: string;
  status: ContractState;
  start_date: Date;
  end_date: Date | null;
  billing_anchor: BillingAnchor;
  progressive_billing: ProgressiveBilling | null;
  created_at: Date;
  updated_at: Date;
}

export type BillingAnchor = 'calendar' | 'anniversary';

/** A contract's progressive billing: its usage thresholds per billing period, as decimal strings, increasing. */
export interface ProgressiveBilling {
  thresholds: string[];
}

export interface SuspensionRow {
  contract_id: string;
  from_date: Date;
  to_date: Date | null;
}

export interface ContractPlanRow {
  id: string;
  organisation_id: string;
  contract_id: string;
  plan_id: string;
  start_date: Date;
  end_date: Date | null;
  /** The customer entities whose usage it bills; null: all the customer's. */
  customer_entity_ids: string[] | null;
  created_at: Date;
  updated_at: Date;
}

export interface ContractMilestoneRow {
  id: string;
  organisation_id: string;
  contract_id: string;
  contract_plan_id: string;
  plan_item_id: string;
  name: string;
  amount: string | null;
  percentage: string | null;
  due_date: Date | null;
  achieved_at: Date | null;
  invoice_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface ContractTaxRow {
  /** The version's own id. */
  id: string;
  /** The tax line the version belongs to: the id the API names it by. */
  line_id: string;
  organisation_id: string;
  contract_id: string;
  /** The first day the version is in force; null: from the contract's start. */
  effective_from: Date | null;
  name: string;
  rate: string;
  /** null: every item. */
  applies_to: string[] | null;
  created_at: Date;
  updated_at: Date;
}

export type Milestone = z.output<typeof milestoneSchema>;
export type ContractTaxRecord = z.output<typeof taxSchema>;

const day = (value: Date | null) => (value ? calendarDay(value) : null);
const plain = formatExactOrNull;

function toContract(row: ContractRow, plans: ContractPlanRow[]): Contract {
  return {
    id: row.id,
    customerId: row.customer_id,
    name: row.name,
    currency: row.currency,
    status: row.status,
    startDate: calendarDay(row.start_date),
    endDate: day(row.end_date),
    billingAnchor: row.billing_anchor,
    progressiveBilling: row.progressive_billing,
    plans: plans.map((plan) => ({ id: plan.id, planId: plan.plan_id, startDate: calendarDay(plan.start_date), endDate: day(plan.end_date), customerEntityIds: plan.customer_entity_ids })),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toMilestone(row: ContractMilestoneRow): Milestone {
  return {
    id: row.id,
    contractId: row.contract_id,
    contractPlanId: row.contract_plan_id,
    planItemId: row.plan_item_id,
    name: row.name,
    amount: plain(row.amount),
    percentage: plain(row.percentage),
    dueDate: day(row.due_date),
    achievedAt: row.achieved_at?.toISOString() ?? null,
    invoiceId: row.invoice_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** A tax's items: all, or the invoice items of the named plan items. */
export const appliesToOf = (row: Pick<ContractTaxRow, 'applies_to'>): 'all' | string[] => (Array.isArray(row.applies_to) ? row.applies_to : 'all');

/** A tax line as the API shows it: its version in force last (its latest), and every version. */
export function toTax(versions: readonly ContractTaxRow[]): ContractTaxRecord {
  const ordered = [...versions].sort(byEffectiveFrom);
  const latest = ordered.at(-1)!;
  const version = (row: ContractTaxRow) => ({ effectiveFrom: day(row.effective_from), name: row.name, rate: plain(row.rate)!, appliesTo: appliesToOf(row) });
  return {
    id: latest.line_id,
    contractId: latest.contract_id,
    ...version(latest),
    versions: ordered.map(version),
    createdAt: ordered[0]!.created_at.toISOString(),
    updatedAt: latest.created_at.toISOString(),
  };
}

/** Versions of a line in the order they take effect (from the start first). */
export const byEffectiveFrom = (a: Pick<ContractTaxRow, 'effective_from'>, b: Pick<ContractTaxRow, 'effective_from'>) =>
  (a.effective_from?.getTime() ?? Number.NEGATIVE_INFINITY) - (b.effective_from?.getTime() ?? Number.NEGATIVE_INFINITY);

/** Rows of tax versions grouped by their line, the lines in the order they were made. */
export function taxLines(rows: readonly ContractTaxRow[]): ContractTaxRow[][] {
  const lines = new Map<string, ContractTaxRow[]>();
  for (const row of [...rows].sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : 1))) lines.set(row.line_id, [...(lines.get(row.line_id) ?? []), row]);
  return [...lines.values()];
}

/** A milestone with what its invoice needs from its contract. */
export type MilestoneToInvoice = ContractMilestoneRow & Pick<ContractRow, 'customer_id' | 'currency'>;

type TaxInput = { name: string; rate: string; appliesTo: 'all' | string[] };

const taxColumns = (tax: TaxInput) => ({ name: tax.name, rate: tax.rate, applies_to: tax.appliesTo === 'all' ? null : JSON.stringify(tax.appliesTo) });

/** Contracts with their plans, milestones and taxes. `db` may be a transaction. */
export function createContractRepository(db: Knex) {
  async function plansOf(contractIds: string[]): Promise<ContractPlanRow[]> {
    return contractIds.length ? db<ContractPlanRow>('contract_plans').whereIn('contract_id', contractIds).orderBy([{ column: 'created_at' }, { column: 'id' }]) : [];
  }

  const milestonesOf = (organisationId: string, contractPlanId: string) => db<ContractMilestoneRow>('contract_milestones').where({ organisation_id: organisationId, contract_plan_id: contractPlanId });

  return {
    async create(
      organisationId: string,
      contract: {
        customerId: string;
        name?: string;
        currency: string;
        startDate: string;
        endDate?: string;
        billingAnchor?: BillingAnchor;
        progressiveBilling?: ProgressiveBilling;
        plans: Array<{ planId: string; startDate?: string; endDate?: string; customerEntityIds?: string[] }>;
      },
    ): Promise<Contract> {
      return db.transaction(async (trx) => {
        const [row] = await trx('contracts')
          .insert({
            id: newId('con'),
            organisation_id: organisationId,
            customer_id: contract.customerId,
            name: contract.name ?? null,
            currency: contract.currency,
            start_date: contract.startDate,
            end_date: contract.endDate ?? null,
            billing_anchor: contract.billingAnchor ?? 'calendar',
            progressive_billing: contract.progressiveBilling ? JSON.stringify(contract.progressiveBilling) : null,
          })
          .returning<ContractRow[]>('*');
        const plans = await trx('contract_plans')
          .insert(
            contract.plans.map((plan) => ({
              id: newId('cpl'),
              organisation_id: organisationId,
              contract_id: row!.id,
              plan_id: plan.planId,
              start_date: plan.startDate ?? contract.startDate,
              end_date: plan.endDate ?? contract.endDate ?? null,
              customer_entity_ids: plan.customerEntityIds ? JSON.stringify(plan.customerEntityIds) : null,
            })),
          )
          .returning<ContractPlanRow[]>('*');
        return toContract(row!, plans);
      });
    },

    async find(organisationId: string, id: string): Promise<Contract | undefined> {
      const row = await db<ContractRow>('contracts').where({ organisation_id: organisationId, id }).first();
      return row ? toContract(row, await plansOf([row.id])) : undefined;
    },

    /** The organisation's contracts among `ids`, with their plans, in two statements. */
    async findMany(organisationId: string, ids: string[]): Promise<Contract[]> {
      if (ids.length === 0) return [];
      const rows = await db<ContractRow>('contracts').where({ organisation_id: organisationId }).whereIn('id', ids);
      const plans = await plansOf(rows.map((row) => row.id));
      const byContract = new Map<string, ContractPlanRow[]>();
      for (const plan of plans) byContract.set(plan.contract_id, (byContract.get(plan.contract_id) ?? []).concat(plan));
      return rows.map((row) => toContract(row, byContract.get(row.id) ?? []));
    },

    async list(organisationId: string, filter: { customerId?: string; status?: ContractState }, paging: PageQuery): Promise<Page<Contract>> {
      const query = db('contracts').where({ organisation_id: organisationId }).select('*');
      if (filter.customerId) query.where({ customer_id: filter.customerId });
      if (filter.status) query.where({ status: filter.status });
      const page = await paginate<ContractRow, ContractRow>(query, paging, { searchColumns: ['name'], map: (row) => row });
      const plans = await plansOf(page.items.map((row) => row.id));
      return { ...page, items: page.items.map((row) => toContract(row, plans.filter((plan) => plan.contract_id === row.id))) };
    },

    async update(organisationId: string, id: string, changes: { name?: string; endDate?: string | null; progressiveBilling?: ProgressiveBilling | null }): Promise<boolean> {
      const updated = await db('contracts')
        .where({ organisation_id: organisationId, id })
        .update({
          ...(changes.name !== undefined ? { name: changes.name } : {}),
          ...(changes.endDate !== undefined ? { end_date: changes.endDate } : {}),
          ...(changes.progressiveBilling !== undefined ? { progressive_billing: changes.progressiveBilling === null ? null : JSON.stringify(changes.progressiveBilling) } : {}),
          updated_at: db.fn.now(),
        });
      return updated > 0;
    },

    /**
     * The active contracts with progressive billing of the customers named, per organisation, in one
     * statement: those whose usage may have crossed a threshold.
     */
    async progressiveOf(customers: ReadonlyArray<{ organisationId: string; customerId: string }>): Promise<Array<{ id: string; organisation_id: string; customer_id: string }>> {
      if (customers.length === 0) return [];
      return db('contracts')
        .whereIn(['organisation_id', 'customer_id'], customers.map((customer) => [customer.organisationId, customer.customerId]))
        .whereNotNull('progressive_billing')
        .where({ status: 'active' })
        .orderBy('id')
        .select('id', 'organisation_id', 'customer_id');
    },

    /** Inside a transaction: the contract's status, its row locked until commit. */
    async lockStatus(organisationId: string, id: string): Promise<ContractState | undefined> {
      const row = await db<ContractRow>('contracts').where({ organisation_id: organisationId, id }).forUpdate().first('status');
      return row?.status;
    },

    async setStatus(id: string, status: ContractState): Promise<void> {
      await db('contracts').where({ id }).update({ status, updated_at: db.fn.now() });
    },

    /**
     * Inside the status transaction: a suspension opens on `day` (the first day not billed) and closes the
     * day before `day` (the first day billed again); one that would cover no day is removed.
     */
    async openSuspension(organisationId: string, contractId: string, day: string): Promise<void> {
      await db('contract_suspensions').insert({ id: newId('csu'), organisation_id: organisationId, contract_id: contractId, from_date: day });
    },

    async closeSuspension(contractId: string, day: string): Promise<void> {
      const open = db('contract_suspensions').where({ contract_id: contractId }).whereNull('to_date');
      await open.clone().where('from_date', '>=', day).delete();
      await open.clone().update({ to_date: db.raw("?::date - interval '1 day'", [day]) });
    },

    /** Inside the status transaction of a resume: when the contract was last resumed. */
    async markResumed(contractId: string): Promise<void> {
      await db('contracts').where({ id: contractId }).update({ resumed_at: db.fn.now() });
    },

    /** Whether the contract was ever resumed after a suspension. */
    async wasResumed(organisationId: string, contractId: string): Promise<boolean> {
      return Boolean(await db('contracts').where({ organisation_id: organisationId, id: contractId }).whereNotNull('resumed_at').first('id'));
    },

    /** A contract that ends or is terminated on `day` bills nothing after it: its end date moves up to it. */
    async endBy(contractId: string, day: string): Promise<void> {
      await db('contracts')
        .where({ id: contractId })
        .andWhere((q) => q.whereNull('end_date').orWhere('end_date', '>', day))
        .update({ end_date: day });
      await db('contract_plans')
        .where({ contract_id: contractId })
        .andWhere((q) => q.whereNull('end_date').orWhere('end_date', '>', day))
        .update({ end_date: db.raw('greatest(start_date, ?::date)', [day]) });
    },

    /**
     * The contracts an invoice run considers: begun by the billing date and past their draft; all, or those
     * named, and only those whose ids lie in `range` (inclusive) when one is given.
     */
    async billableIds(organisationId: string, billingDate: string, only?: string[], range?: { from: string; to: string }): Promise<string[]> {
      const query = db('contracts').where({ organisation_id: organisationId }).whereNot({ status: 'draft' }).andWhere('start_date', '<=', billingDate);
      if (only) query.whereIn('id', only);
      if (range) query.whereBetween('id', [range.from, range.to]);
      return query.orderBy('id').pluck('id');
    },

    /**
     * Inside a transaction: the rows of the organisation's contracts among `ids`, locked until commit, in
     * id order, so that two transactions locking overlapping sets take the locks in the same order and
     * never deadlock. Answers the ids locked.
     */
    async lockMany(organisationId: string, ids: string[]): Promise<string[]> {
      if (ids.length === 0) return [];
      return db('contracts').where({ organisation_id: organisationId }).whereIn('id', ids).orderBy('id').forUpdate().pluck('id');
    },

    /** The suspensions of each of the contracts, oldest first. */
    async suspensionsOf(contractIds: string[]): Promise<SuspensionRow[]> {
      if (contractIds.length === 0) return [];
      return db('contract_suspensions').whereIn('contract_id', contractIds).orderBy([{ column: 'contract_id' }, { column: 'from_date' }]).select<SuspensionRow[]>('contract_id', 'from_date', 'to_date');
    },

    async contractPlan(organisationId: string, contractId: string, contractPlanId: string): Promise<ContractPlanRow | undefined> {
      return db<ContractPlanRow>('contract_plans').where({ organisation_id: organisationId, contract_id: contractId, id: contractPlanId }).first();
    },

    /** A plan change: the contract plan's new last day (null: open-ended again, after an undo). */
    async setPlanEnd(contractPlanId: string, endDate: string | null): Promise<void> {
      await db('contract_plans').where({ id: contractPlanId }).update({ end_date: endDate, updated_at: db.fn.now() });
    },

    /** A plan change: the contract plan that takes over. */
    async addPlan(organisationId: string, contractId: string, plan: { planId: string; startDate: string; endDate: string | null; customerEntityIds: string[] | null }): Promise<string> {
      const id = newId('cpl');
      await db('contract_plans').insert({
        id,
        organisation_id: organisationId,
        contract_id: contractId,
        plan_id: plan.planId,
        start_date: plan.startDate,
        end_date: plan.endDate,
        customer_entity_ids: plan.customerEntityIds ? JSON.stringify(plan.customerEntityIds) : null,
      });
      return id;
    },

    /** An undone plan change: the contract plan it added, which nothing has billed. */
    async deletePlan(contractPlanId: string): Promise<void> {
      await db('contract_plans').where({ id: contractPlanId }).delete();
    },

    /** Whether the contract plan has milestones (achieved or not). */
    async planHasMilestones(contractPlanId: string): Promise<boolean> {
      return Boolean(await db('contract_milestones').where({ contract_plan_id: contractPlanId }).first('id'));
    },

    /** Whether a contract bills the plan. */
    /** The customer's contracts that are not ended or terminated, oldest first. */
    async openOfCustomer(organisationId: string, customerId: string): Promise<Array<{ id: string; status: string }>> {
      return db('contracts').where({ organisation_id: organisationId, customer_id: customerId }).whereNotIn('status', ['ended', 'terminated']).orderBy([{ column: 'created_at' }, { column: 'id' }]).select('id', 'status');
    },

    async planInUse(organisationId: string, planId: string): Promise<boolean> {
      return Boolean(await db('contract_plans').where({ organisation_id: organisationId, plan_id: planId }).first('id'));
    },

    /** Whether a milestone names the plan item. */
    /**
     * The plans of the customer's contracts that bill usage now or later: those of contracts active or
     * suspended, and every plan of `contractId` (being activated or changed), with their contract's end.
     */
    async usagePlansOf(organisationId: string, customerId: string, contractId: string): Promise<Array<ContractPlanRow & { contract_end_date: Date | null }>> {
      return db('contract_plans as cp')
        .join('contracts as c', 'c.id', 'cp.contract_id')
        .where({ 'c.organisation_id': organisationId, 'c.customer_id': customerId })
        .andWhere((q) => q.whereIn('c.status', ['active', 'suspended']).orWhere('c.id', contractId))
        .orderBy('cp.id')
        .select('cp.*', 'c.end_date as contract_end_date');
    },

    /** The customer's active contracts in the currency, by id: those a spend alert on the customer sums. */
    async activeIdsOf(organisationId: string, customerId: string, currency: string): Promise<string[]> {
      return db('contracts').where({ organisation_id: organisationId, customer_id: customerId, currency, status: 'active' }).orderBy('id').pluck('id');
    },

    /** The plan items that milestones bill on each of the contract plans. */
    async milestoneItemsOf(contractPlanIds: readonly string[]): Promise<Array<{ contract_plan_id: string; plan_item_id: string }>> {
      if (contractPlanIds.length === 0) return [];
      return db('contract_milestones').whereIn('contract_plan_id', contractPlanIds).distinct('contract_plan_id', 'plan_item_id');
    },

    async planItemInUse(organisationId: string, planItemId: string): Promise<boolean> {
      return Boolean(await db('contract_milestones').where({ organisation_id: organisationId, plan_item_id: planItemId }).first('id'));
    },

    async createMilestone(
      organisationId: string,
      milestone: { contractId: string; contractPlanId: string; planItemId: string; name: string; amount?: string; percentage?: string; dueDate?: string },
    ): Promise<Milestone> {
      const [row] = await db('contract_milestones')
        .insert({
          id: newId('mst'),
          organisation_id: organisationId,
          contract_id: milestone.contractId,
          contract_plan_id: milestone.contractPlanId,
          plan_item_id: milestone.planItemId,
          name: milestone.name,
          amount: milestone.amount ?? null,
          percentage: milestone.percentage ?? null,
          due_date: milestone.dueDate ?? null,
        })
        .returning<ContractMilestoneRow[]>('*');
      return toMilestone(row!);
    },

    async milestones(organisationId: string, contractPlanId: string): Promise<Milestone[]> {
      const rows = await milestonesOf(organisationId, contractPlanId).orderBy([{ column: 'created_at' }, { column: 'id' }]);
      return rows.map(toMilestone);
    },

    async milestone(organisationId: string, contractPlanId: string, id: string): Promise<Milestone | undefined> {
      const row = await milestonesOf(organisationId, contractPlanId).where({ id }).first();
      return row ? toMilestone(row) : undefined;
    },

    /** Inside a transaction: the milestone with its contract's customer and currency, its row locked until commit. */
    async lockMilestone(organisationId: string, contractId: string, id: string): Promise<MilestoneToInvoice | undefined> {
      return db('contract_milestones as m')
        .join('contracts as c', 'c.id', 'm.contract_id')
        .where({ 'm.organisation_id': organisationId, 'm.contract_id': contractId, 'm.id': id })
        .forUpdate('m')
        .first<MilestoneToInvoice | undefined>('m.*', 'c.customer_id', 'c.currency');
    },

    async markMilestoneAchieved(id: string, invoiceId: string): Promise<void> {
      await db('contract_milestones').where({ id }).update({ achieved_at: db.fn.now(), invoice_id: invoiceId, updated_at: db.fn.now() });
    },

    /**
     * Deletes a milestone not achieved yet. The delete itself requires it unachieved: an achievement
     * committing meanwhile (it holds the row's lock) makes it delete nothing, and the answer is `achieved`.
     */
    async deleteMilestone(organisationId: string, contractPlanId: string, id: string): Promise<'deleted' | 'achieved' | undefined> {
      const deleted = await milestonesOf(organisationId, contractPlanId).where({ id }).whereNull('achieved_at').delete();
      if (deleted > 0) return 'deleted';
      const row = await milestonesOf(organisationId, contractPlanId).where({ id }).first('achieved_at');
      return row ? 'achieved' : undefined;
    },

    /** A new tax line, in force from `effectiveFrom` (null: from the contract's start). */
    async createTax(organisationId: string, contractId: string, tax: TaxInput, effectiveFrom: string | null): Promise<ContractTaxRecord> {
      const id = newId('tax');
      const [row] = await db('contract_taxes')
        .insert({ id, line_id: id, organisation_id: organisationId, contract_id: contractId, effective_from: effectiveFrom, ...taxColumns(tax) })
        .returning<ContractTaxRow[]>('*');
      return toTax([row!]);
    },

    async taxes(organisationId: string, contractId: string): Promise<ContractTaxRecord[]> {
      return taxLines(await db<ContractTaxRow>('contract_taxes').where({ organisation_id: organisationId, contract_id: contractId })).map(toTax);
    },

    /** The versions of a tax line, locked until the transaction `db` ends; none when it is not the contract's. */
    async lockTaxLine(organisationId: string, contractId: string, lineId: string): Promise<ContractTaxRow[]> {
      return db<ContractTaxRow>('contract_taxes').where({ organisation_id: organisationId, contract_id: contractId, line_id: lineId }).forUpdate();
    },

    /**
     * A version of the line in force from `effectiveFrom`, replacing the versions the line had from that day
     * on (only days nothing has charged yet can take a version, so no document used them).
     */
    async versionTax(organisationId: string, contractId: string, lineId: string, tax: TaxInput, effectiveFrom: string | null): Promise<ContractTaxRecord> {
      const later = db('contract_taxes').where({ organisation_id: organisationId, contract_id: contractId, line_id: lineId });
      if (effectiveFrom !== null) later.where('effective_from', '>=', effectiveFrom);
      await later.delete();
      await db('contract_taxes').insert({ id: newId('tax'), line_id: lineId, organisation_id: organisationId, contract_id: contractId, effective_from: effectiveFrom, ...taxColumns(tax) });
      return toTax(await db<ContractTaxRow>('contract_taxes').where({ line_id: lineId }));
    },
  };
}

export type ContractRepository = ReturnType<typeof createContractRepository>;
