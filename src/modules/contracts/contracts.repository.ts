import type { Knex } from 'knex';
import type { z } from 'zod';
import { calendarDay } from '../../db/dates';
import { newId } from '../../db/ids';
import type { ContractState } from '../../domain/contract-state';
import { toDecimal } from '../../domain/money';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { contractSchema, milestoneSchema, taxSchema } from './contracts.schemas';

type Contract = z.output<typeof contractSchema>;

interface ContractRow {
  id: string;
  organisation_id: string;
  customer_id: string;
  name: string | null;
  currency: string;
  status: ContractState;
  start_date: Date;
  end_date: Date | null;
  created_at: Date;
  updated_at: Date;
}

interface ContractPlanRow {
  id: string;
  contract_id: string;
  plan_id: string;
  start_date: Date;
  end_date: Date | null;
}

const day = (value: Date | null) => (value ? calendarDay(value) : null);
const plain = (value: string | null) => (value === null ? null : toDecimal(value).toFixed());

function toContract(row: ContractRow, plans: ContractPlanRow[]): Contract {
  return {
    id: row.id,
    customerId: row.customer_id,
    name: row.name,
    currency: row.currency,
    status: row.status,
    startDate: calendarDay(row.start_date),
    endDate: day(row.end_date),
    plans: plans.map((plan) => ({ id: plan.id, planId: plan.plan_id, startDate: calendarDay(plan.start_date), endDate: day(plan.end_date) })),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toMilestone(row: Record<string, unknown> & { created_at: Date; updated_at: Date }): z.output<typeof milestoneSchema> {
  return {
    id: row.id as string,
    contractId: row.contract_id as string,
    contractPlanId: row.contract_plan_id as string,
    planItemId: row.plan_item_id as string,
    name: row.name as string,
    amount: plain(row.amount as string | null),
    percentage: plain(row.percentage as string | null),
    dueDate: day(row.due_date as Date | null),
    achievedAt: (row.achieved_at as Date | null)?.toISOString() ?? null,
    invoiceId: row.invoice_id as string | null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toTax(row: Record<string, unknown> & { created_at: Date; updated_at: Date }): z.output<typeof taxSchema> {
  return {
    id: row.id as string,
    contractId: row.contract_id as string,
    name: row.name as string,
    rate: plain(row.rate as string)!,
    appliesTo: Array.isArray(row.applies_to) ? (row.applies_to as string[]) : 'all',
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function createContractRepository(db: Knex) {
  async function plansOf(contractIds: string[]): Promise<ContractPlanRow[]> {
    return contractIds.length ? db('contract_plans').whereIn('contract_id', contractIds).orderBy([{ column: 'created_at' }, { column: 'id' }]) : [];
  }

  return {
    async create(
      organisationId: string,
      contract: { customerId: string; name?: string; currency: string; startDate: string; endDate?: string; plans: Array<{ planId: string; startDate?: string; endDate?: string }> },
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

    async list(organisationId: string, filter: { customerId?: string; status?: ContractState }, paging: PageQuery): Promise<Page<Contract>> {
      const query = db('contracts').where({ organisation_id: organisationId }).select('*');
      if (filter.customerId) query.where({ customer_id: filter.customerId });
      if (filter.status) query.where({ status: filter.status });
      const page = await paginate<ContractRow, ContractRow>(query, paging, { searchColumns: ['name'], map: (row) => row });
      const plans = await plansOf(page.items.map((row) => row.id));
      return { ...page, items: page.items.map((row) => toContract(row, plans.filter((plan) => plan.contract_id === row.id))) };
    },

    async update(organisationId: string, id: string, changes: { name?: string; endDate?: string | null }): Promise<boolean> {
      const updated = await db('contracts')
        .where({ organisation_id: organisationId, id })
        .update({
          ...(changes.name !== undefined ? { name: changes.name } : {}),
          ...(changes.endDate !== undefined ? { end_date: changes.endDate } : {}),
          updated_at: db.fn.now(),
        });
      return updated > 0;
    },

    async contractPlan(organisationId: string, contractId: string, contractPlanId: string): Promise<ContractPlanRow | undefined> {
      return db('contract_plans').where({ organisation_id: organisationId, contract_id: contractId, id: contractPlanId }).first();
    },

    async planItemBelongs(organisationId: string, planId: string, planItemId: string): Promise<boolean> {
      return Boolean(await db('billing_plan_items').where({ organisation_id: organisationId, plan_id: planId, id: planItemId }).first('id'));
    },

    async createMilestone(
      organisationId: string,
      milestone: { contractId: string; contractPlanId: string; planItemId: string; name: string; amount?: string; percentage?: string; dueDate?: string },
    ) {
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
        .returning('*');
      return toMilestone(row);
    },

    async milestones(organisationId: string, contractPlanId: string) {
      const rows = await db('contract_milestones').where({ organisation_id: organisationId, contract_plan_id: contractPlanId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
      return rows.map(toMilestone);
    },

    async milestone(organisationId: string, contractPlanId: string, id: string) {
      const row = await db('contract_milestones').where({ organisation_id: organisationId, contract_plan_id: contractPlanId, id }).first();
      return row ? toMilestone(row) : undefined;
    },

    async deleteMilestone(organisationId: string, contractPlanId: string, id: string): Promise<'deleted' | 'achieved' | undefined> {
      const row = await db('contract_milestones').where({ organisation_id: organisationId, contract_plan_id: contractPlanId, id }).first('achieved_at');
      if (!row) return undefined;
      if (row.achieved_at) return 'achieved';
      await db('contract_milestones').where({ id }).delete();
      return 'deleted';
    },

    async createTax(organisationId: string, contractId: string, tax: { name: string; rate: string; appliesTo: 'all' | string[] }) {
      const [row] = await db('contract_taxes')
        .insert({ id: newId('tax'), organisation_id: organisationId, contract_id: contractId, name: tax.name, rate: tax.rate, applies_to: tax.appliesTo === 'all' ? null : JSON.stringify(tax.appliesTo) })
        .returning('*');
      return toTax(row);
    },

    async taxes(organisationId: string, contractId: string) {
      const rows = await db('contract_taxes').where({ organisation_id: organisationId, contract_id: contractId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
      return rows.map(toTax);
    },

    async updateTax(organisationId: string, contractId: string, id: string, tax: { name: string; rate: string; appliesTo: 'all' | string[] }) {
      const [row] = await db('contract_taxes')
        .where({ organisation_id: organisationId, contract_id: contractId, id })
        .update({ name: tax.name, rate: tax.rate, applies_to: tax.appliesTo === 'all' ? null : JSON.stringify(tax.appliesTo), updated_at: db.fn.now() })
        .returning('*');
      return row ? toTax(row) : undefined;
    },
  };
}

export type ContractRepository = ReturnType<typeof createContractRepository>;
