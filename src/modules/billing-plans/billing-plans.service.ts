import type { Knex } from 'knex';
import type { z } from 'zod';
import { calendarDay } from '../../db/dates';
import { addDays } from '../../domain/billing-periods';
import { isCurrency } from '../../domain/currencies';
import { AppError, DomainError, orNotFound } from '../../domain/errors';
import { dimensionalProblems } from '../../domain/dimensional-prices';
import { validatePlanItemPricing } from '../../domain/pricing';
import type { Page, PageQuery } from '../../http/paging';
import { skusIn } from '../catalog';
import { chargesIn, describeCharge } from '../charges';
import { metersIn } from '../meters';
import { organisationToday as todayOf } from '../organisation-settings';
import { createBillingPlanRepository } from './billing-plans.repository';
import type { createPlanBody, planItemInput, planItemSchema, planSchema, updatePlanBody } from './billing-plans.schemas';

type PlanItemInput = z.output<typeof planItemInput>;
type Plan = z.output<typeof planSchema>;
type PlanItem = z.output<typeof planItemSchema>;

/** Every item must be priceable before anything is stored, its price entries too; the error names the item (and the entry). */
function assertPriceable(items: PlanItemInput[], path: string): void {
  const priceable = (priced: Parameters<typeof validatePlanItemPricing>[0], at: string) => {
    try {
      validatePlanItemPricing(priced);
    } catch (error) {
      if (error instanceof DomainError) throw AppError.validation(error.message, at);
      throw error;
    }
  };
  items.forEach((item, i) => {
    if (item.pricingModel !== null) priceable({ ...item, pricingModel: item.pricingModel }, `${path}.${i}`);
    item.dimensionalPrices?.forEach((entry, j) => priceable(entry, `${path}.${i}.dimensionalPrices.${j}`));
  });
}

/** An edit effective from `day` must not rewrite what a contract was already charged for. */
async function assertNotCharged(db: Knex, filter: { planItemIds: string[] }, day: string, what: string): Promise<void> {
  const charge = await chargesIn(db).firstChargedFrom(filter, day);
  if (charge) throw AppError.conflict(`${describeCharge(charge)}: ${what} can change from ${addDays(charge.to, 1)} on, not from ${day}`);
}

/**
 * What the modules that bill plans say of their use (contracts, milestones): the plan service asks, the
 * composition root answers with the contracts module's face. `db` may be the caller's transaction.
 */
export interface PlanUse {
  /** Whether a contract bills the plan. */
  planInUse(db: Knex, organisationId: string, planId: string): Promise<boolean>;
  /** Whether a milestone names the plan item. */
  planItemInUse(db: Knex, organisationId: string, planItemId: string): Promise<boolean>;
}

export function createBillingPlanService(db: Knex, use: PlanUse) {
  const plans = createBillingPlanRepository(db);
  const meters = metersIn(db);
  const skus = skusIn(db);

  /**
   * An item's meter and SKU must be the organisation's own: another's answers as a missing one, 404. Prices
   * per dimension value must name the meter's dimensions, on a meter whose usage folds, and never tie (400).
   */
  async function assertReferences(organisationId: string, items: PlanItemInput[], pathOf: (index: number) => string): Promise<void> {
    for (const [i, item] of items.entries()) {
      const meter = item.meterId ? orNotFound(await meters.findById(organisationId, item.meterId), 'Meter', `${pathOf(i)}.meterId`) : undefined;
      if (item.skuId) orNotFound(await skus.findById(organisationId, item.skuId), 'SKU', `${pathOf(i)}.skuId`);
      if (!meter) continue;
      const problems = dimensionalProblems(item, { groupBy: meter.group_by, aggregation: meter.aggregation });
      if (problems.length > 0) throw AppError.invalid(problems.map((problem) => ({ path: `${pathOf(i)}.${problem.path}`, message: problem.message })));
    }
  }

  async function get(organisationId: string, id: string): Promise<Plan> {
    return orNotFound(await plans.find(organisationId, id), 'Billing plan');
  }

  return {
    get,

    async create(organisationId: string, body: z.output<typeof createPlanBody>): Promise<Plan> {
      if (!isCurrency(body.currency)) throw AppError.validation(`${body.currency} is not an ISO 4217 currency`, 'body.currency');
      assertPriceable(body.items, 'body.items');
      await assertReferences(organisationId, body.items, (i) => `body.items.${i}`);
      return plans.create(organisationId, body);
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<Plan>> {
      return plans.list(organisationId, paging);
    },

    /**
     * A name changes in place. A billing period changes in place while no contract uses the plan; after
     * that it takes effect from `effectiveDate` (default: today in the organisation's time zone) for every
     * contract on the plan, and never for a day a contract was already charged for (409 naming the charge).
     */
    async update(organisationId: string, id: string, changes: z.output<typeof updatePlanBody>): Promise<Plan> {
      if (changes.effectiveDate !== undefined && changes.billingPeriod === undefined) throw AppError.validation('effectiveDate dates a change of billingPeriod: give billingPeriod too', 'body.effectiveDate');
      await db.transaction(async (trx) => {
        const repository = createBillingPlanRepository(trx);
        const plan = orNotFound(await repository.lock(organisationId, id), 'Billing plan');
        if (changes.name) await repository.update(organisationId, id, { name: changes.name });
        if (changes.billingPeriod === undefined) return;
        if (!(await use.planInUse(trx, organisationId, id))) {
          await repository.setBillingPeriod(id, changes.billingPeriod, null);
          return;
        }
        const from = changes.effectiveDate ?? (await todayOf(trx, organisationId));
        const itemIds = (await repository.find(organisationId, plan.id))!.items.map((item) => item.id);
        await assertNotCharged(trx, { planItemIds: itemIds }, from, 'the billing period');
        await repository.setBillingPeriod(id, changes.billingPeriod, from);
      });
      return get(organisationId, id);
    },

    /** Refused while a contract bills the plan (the foreign key would refuse it too). */
    async delete(organisationId: string, id: string): Promise<void> {
      if (await use.planInUse(db, organisationId, id)) throw AppError.conflict('A contract uses this plan');
      if (!(await plans.delete(organisationId, id))) throw AppError.notFound('Billing plan');
    },

    /**
     * An item added to a plan that contracts use is in force from `effectiveDate` (default: today in the
     * organisation's time zone): their next invoices charge it from that day, never for the days before.
     * On a plan no contract uses, it is in force from each contract plan's start, unless dated.
     */
    async addItem(organisationId: string, planId: string, item: PlanItemInput, effectiveDate?: string): Promise<PlanItem> {
      await get(organisationId, planId);
      assertPriceable([item], 'body');
      await assertReferences(organisationId, [item], () => 'body');
      const inUse = await use.planInUse(db, organisationId, planId);
      const from = effectiveDate ?? (inUse ? await todayOf(db, organisationId) : null);
      return plans.addItem(organisationId, planId, item, from);
    },

    /**
     * Refused while a milestone names the item. An item no contract was ever charged for, on a plan no
     * contract uses, is deleted; any other stays in the plan's history, in force through the day before
     * `effectiveDate` (default: today in the organisation's time zone), which no charge may reach (409).
     */
    async deleteItem(organisationId: string, planId: string, itemId: string, effectiveDate?: string): Promise<void> {
      if (await use.planItemInUse(db, organisationId, itemId)) throw AppError.conflict('A milestone names this plan item');
      await db.transaction(async (trx) => {
        const repository = createBillingPlanRepository(trx);
        orNotFound(await repository.lock(organisationId, planId), 'Plan item');
        const item = await repository.findItem(organisationId, itemId);
        if (!item || item.plan_id !== planId) throw AppError.notFound('Plan item');
        // Removed once is removed: a later date would bring back days it was out of force.
        if (item.effective_to) throw AppError.conflict(`the plan item was already removed: its last day in force is ${calendarDay(item.effective_to)}`);
        const charged = await chargesIn(trx).anyFor([itemId]);
        if (!charged && !(await use.planInUse(trx, organisationId, planId))) {
          await repository.deleteItem(organisationId, planId, itemId);
          return;
        }
        const from = effectiveDate ?? (await todayOf(trx, organisationId));
        await assertNotCharged(trx, { planItemIds: [itemId] }, from, 'the item');
        const lastDay = addDays(from, -1);
        const startedOn = item.effective_from ? calendarDay(item.effective_from) : null;
        // An item removed before its first day in force was never in force: nothing keeps it.
        if (!charged && startedOn !== null && lastDay < startedOn) await repository.deleteItem(organisationId, planId, itemId);
        else await repository.endItem(itemId, lastDay);
      });
    },
  };
}

export type BillingPlanService = ReturnType<typeof createBillingPlanService>;
