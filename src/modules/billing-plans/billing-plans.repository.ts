import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { newId } from '../../db/ids';
import type { PeriodVersion } from '../../domain/rating';
import { formatExactOrNull } from '../../domain/money';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { z } from 'zod';
import type { planItemInput, planItemSchema, planSchema } from './billing-plans.schemas';

type PlanItemInput = z.output<typeof planItemInput>;
type Plan = z.output<typeof planSchema>;
type PlanItem = z.output<typeof planItemSchema>;

export interface PlanRow {
  id: string;
  organisation_id: string;
  name: string;
  currency: string;
  billing_period: Plan['billingPeriod'];
  created_at: Date;
  updated_at: Date;
}

export interface PlanItemRow {
  id: string;
  organisation_id: string;
  plan_id: string;
  name: string;
  sku_id: string | null;
  pricing_model: PlanItem['pricingModel'];
  unit_price: string | null;
  quantity: string | null;
  tiers: PlanItem['tiers'];
  package_size: string | null;
  meter_id: string | null;
  dimensional_prices: PlanItem['dimensionalPrices'];
  presentation_group_by: string[] | null;
  billing_timing: 'in_advance' | 'in_arrears';
  effective_from: Date | null;
  effective_to: Date | null;
  created_at: Date;
  updated_at: Date;
}

const plain = formatExactOrNull;

export function toPlanItem(row: PlanItemRow): PlanItem {
  return {
    id: row.id,
    planId: row.plan_id,
    name: row.name,
    skuId: row.sku_id,
    pricingModel: row.pricing_model,
    unitPrice: plain(row.unit_price),
    quantity: plain(row.quantity),
    tiers: row.tiers,
    packageSize: plain(row.package_size),
    meterId: row.meter_id,
    dimensionalPrices: row.dimensional_prices,
    presentationGroupBy: row.presentation_group_by,
    billingTiming: row.billing_timing,
    effectiveFrom: row.effective_from ? calendarDay(row.effective_from) : null,
    effectiveTo: row.effective_to ? calendarDay(row.effective_to) : null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function toPlan(row: PlanRow, items: PlanItemRow[]): Plan {
  return {
    id: row.id,
    name: row.name,
    currency: row.currency,
    billingPeriod: row.billing_period,
    items: items.map(toPlanItem),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** A price entry as stored and shown: every price field there, null where its model has none. */
const storedPrice = (entry: NonNullable<PlanItemInput['dimensionalPrices']>[number]) => ({
  match: entry.match,
  pricingModel: entry.pricingModel,
  unitPrice: entry.unitPrice ?? null,
  quantity: entry.quantity ?? null,
  tiers: entry.tiers ?? null,
  packageSize: entry.packageSize ?? null,
});

function itemRow(organisationId: string, planId: string, item: PlanItemInput, effectiveFrom: string | null = null) {
  return {
    effective_from: effectiveFrom,
    id: newId('pli'),
    organisation_id: organisationId,
    plan_id: planId,
    name: item.name,
    sku_id: item.skuId ?? null,
    pricing_model: item.pricingModel,
    unit_price: item.unitPrice ?? null,
    quantity: item.quantity ?? null,
    tiers: item.tiers ? JSON.stringify(item.tiers) : null,
    package_size: item.packageSize ?? null,
    meter_id: item.meterId ?? null,
    dimensional_prices: item.dimensionalPrices ? JSON.stringify(item.dimensionalPrices.map(storedPrice)) : null,
    presentation_group_by: item.presentationGroupBy ? JSON.stringify(item.presentationGroupBy) : null,
    // Metered usage is known once its period has ended; fees are billed ahead.
    billing_timing: item.billingTiming ?? (item.meterId ? 'in_arrears' : 'in_advance'),
  };
}

/** Billing plans and their items. `db` may be a transaction. */
export function createBillingPlanRepository(db: Knex) {
  async function itemsOf(planIds: string[]): Promise<PlanItemRow[]> {
    return planIds.length ? db('billing_plan_items').whereIn('plan_id', planIds).orderBy([{ column: 'created_at' }, { column: 'id' }]) : [];
  }

  return {
    async create(organisationId: string, plan: { name: string; currency: string; billingPeriod: Plan['billingPeriod']; items: PlanItemInput[] }): Promise<Plan> {
      return db.transaction(async (trx) => {
        const [row] = await trx('billing_plans')
          .insert({ id: newId('pln'), organisation_id: organisationId, name: plan.name, currency: plan.currency, billing_period: plan.billingPeriod })
          .returning<PlanRow[]>('*');
        const items = plan.items.length ? await trx('billing_plan_items').insert(plan.items.map((item) => itemRow(organisationId, row!.id, item))).returning<PlanItemRow[]>('*') : [];
        await trx('billing_plan_periods').insert({ plan_id: row!.id, effective_from: null, billing_period: plan.billingPeriod });
        return toPlan(row!, items);
      });
    },

    async find(organisationId: string, id: string): Promise<Plan | undefined> {
      const row = await db<PlanRow>('billing_plans').where({ organisation_id: organisationId, id }).first();
      return row ? toPlan(row, await itemsOf([row.id])) : undefined;
    },

    /** The organisation's plans among `ids`, with their items, in two statements. */
    async findMany(organisationId: string, ids: string[]): Promise<Plan[]> {
      if (ids.length === 0) return [];
      const rows = await db<PlanRow>('billing_plans').where({ organisation_id: organisationId }).whereIn('id', ids);
      const items = await itemsOf(rows.map((row) => row.id));
      return rows.map((row) => toPlan(row, items.filter((item) => item.plan_id === row.id)));
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<Plan>> {
      const page = await paginate<PlanRow, PlanRow>(db('billing_plans').where({ organisation_id: organisationId }).select('*'), paging, { searchColumns: ['name'], map: (row) => row });
      const items = await itemsOf(page.items.map((row) => row.id));
      return { ...page, items: page.items.map((row) => toPlan(row, items.filter((item) => item.plan_id === row.id))) };
    },

    async update(organisationId: string, id: string, changes: { name?: string }): Promise<boolean> {
      const updated = await db('billing_plans')
        .where({ organisation_id: organisationId, id })
        .update({ ...(changes.name ? { name: changes.name } : {}), updated_at: db.fn.now() });
      return updated > 0;
    },

    /**
     * The plan's billing period from `effectiveFrom` on (null: from the start, replacing every version),
     * replacing any version from a later day; the plan's own `billingPeriod` shows the latest.
     */
    async setBillingPeriod(planId: string, billingPeriod: Plan['billingPeriod'], effectiveFrom: string | null): Promise<void> {
      const versions = db('billing_plan_periods').where({ plan_id: planId });
      if (effectiveFrom === null) await versions.clone().delete();
      else await versions.clone().where('effective_from', '>=', effectiveFrom).delete();
      await db('billing_plan_periods').insert({ plan_id: planId, effective_from: effectiveFrom, billing_period: billingPeriod });
      await db('billing_plans').where({ id: planId }).update({ billing_period: billingPeriod, updated_at: db.fn.now() });
    },

    /** The billing-period versions of each of the plans, oldest first. */
    async periodsOf(planIds: readonly string[]): Promise<Map<string, PeriodVersion[]>> {
      const versions = new Map<string, PeriodVersion[]>(planIds.map((id) => [id, []]));
      if (planIds.length === 0) return versions;
      const rows = await db('billing_plan_periods')
        .whereIn('plan_id', planIds)
        .orderByRaw('effective_from NULLS FIRST')
        .select<Array<{ plan_id: string; effective_from: Date | null; billing_period: Plan['billingPeriod'] }>>('plan_id', 'effective_from', 'billing_period');
      for (const row of rows) versions.get(row.plan_id)?.push({ effectiveFrom: row.effective_from ? calendarDay(row.effective_from) : null, billingPeriod: row.billing_period });
      return versions;
    },

    /** The ids among `ids` of the organisation's plans. */
    async existingIds(organisationId: string, ids: string[]): Promise<string[]> {
      return db('billing_plans').where({ organisation_id: organisationId }).whereIn('id', ids).pluck('id');
    },

    /** The currency of each of the organisation's plans among `ids`. */
    async currencies(organisationId: string, ids: string[]): Promise<Array<{ id: string; currency: string }>> {
      return db('billing_plans').where({ organisation_id: organisationId }).whereIn('id', ids).select('id', 'currency');
    },

    /** The ids among `itemIds` of the organisation's plan items. */
    async existingItemIds(organisationId: string, itemIds: string[]): Promise<string[]> {
      return db('billing_plan_items').where({ organisation_id: organisationId }).whereIn('id', itemIds).pluck('id');
    },

    /** The ids of the organisation's plan items that bill the meter, in any plan, past terms too. */
    async itemIdsOfMeter(organisationId: string, meterId: string): Promise<string[]> {
      return db('billing_plan_items').where({ organisation_id: organisationId, meter_id: meterId }).pluck('id');
    },

    /** The items of the meter that price or split its usage by dimension value, with those terms. */
    async dimensionalItemsOfMeter(organisationId: string, meterId: string): Promise<Array<Pick<PlanItem, 'id' | 'planId' | 'dimensionalPrices' | 'presentationGroupBy'>>> {
      const rows = await db('billing_plan_items')
        .where({ organisation_id: organisationId, meter_id: meterId })
        .where((where) => where.whereNotNull('dimensional_prices').orWhereNotNull('presentation_group_by'))
        .orderBy('id')
        .select<Array<Pick<PlanItemRow, 'id' | 'plan_id' | 'dimensional_prices' | 'presentation_group_by'>>>('id', 'plan_id', 'dimensional_prices', 'presentation_group_by');
      return rows.map((row) => ({ id: row.id, planId: row.plan_id, dimensionalPrices: row.dimensional_prices, presentationGroupBy: row.presentation_group_by }));
    },

    /** The ids among `itemIds` of items of the given plans of the organisation. */
    async itemIdsAmong(organisationId: string, planIds: string[], itemIds: string[]): Promise<string[]> {
      return db('billing_plan_items').where({ organisation_id: organisationId }).whereIn('plan_id', planIds).whereIn('id', itemIds).pluck('id');
    },

    async delete(organisationId: string, id: string): Promise<boolean> {
      return (await db('billing_plans').where({ organisation_id: organisationId, id }).delete()) > 0;
    },

    async addItem(organisationId: string, planId: string, item: PlanItemInput, effectiveFrom: string | null): Promise<PlanItem> {
      const [row] = await db('billing_plan_items').insert(itemRow(organisationId, planId, item, effectiveFrom)).returning<PlanItemRow[]>('*');
      return toPlanItem(row!);
    },

    async findItem(organisationId: string, id: string): Promise<PlanItemRow | undefined> {
      return db<PlanItemRow>('billing_plan_items').where({ organisation_id: organisationId, id }).first();
    },

    async itemBelongs(organisationId: string, planId: string, itemId: string): Promise<boolean> {
      return Boolean(await db('billing_plan_items').where({ organisation_id: organisationId, plan_id: planId, id: itemId }).first('id'));
    },

    async deleteItem(organisationId: string, planId: string, itemId: string): Promise<boolean> {
      return (await db('billing_plan_items').where({ organisation_id: organisationId, plan_id: planId, id: itemId }).delete()) > 0;
    },

    /** The item's last day in force: it stays in the plan's history. */
    async endItem(itemId: string, lastDay: string): Promise<void> {
      await db('billing_plan_items').where({ id: itemId }).update({ effective_to: lastDay, updated_at: db.fn.now() });
    },

    /** Inside a transaction: the plan's row, locked until commit, so that edits of one plan take turns. */
    async lock(organisationId: string, id: string): Promise<PlanRow | undefined> {
      return db<PlanRow>('billing_plans').where({ organisation_id: organisationId, id }).forUpdate().first();
    },
  };
}

export type BillingPlanRepository = ReturnType<typeof createBillingPlanRepository>;
