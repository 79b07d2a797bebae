import type { Knex } from 'knex';
import type { z } from 'zod';
import { isCurrency } from '../../domain/currencies';
import { AppError, DomainError, orNotFound } from '../../domain/errors';
import { validatePlanItemPricing } from '../../domain/pricing';
import type { Page, PageQuery } from '../../http/paging';
import { createSkuRepository } from '../catalog/catalog.repository';
import { createContractRepository } from '../contracts/contracts.repository';
import { createMeterRepository } from '../meters/meters.repository';
import { createBillingPlanRepository } from './billing-plans.repository';
import type { createPlanBody, planItemInput, planItemSchema, planSchema, updatePlanBody } from './billing-plans.schemas';

type PlanItemInput = z.output<typeof planItemInput>;
type Plan = z.output<typeof planSchema>;
type PlanItem = z.output<typeof planItemSchema>;

/** Every item must be priceable before anything is stored; the error names the item. */
function assertPriceable(items: PlanItemInput[], path: string): void {
  items.forEach((item, i) => {
    try {
      validatePlanItemPricing(item);
    } catch (error) {
      if (error instanceof DomainError) throw AppError.validation(error.message, `${path}.${i}`);
      throw error;
    }
  });
}

export function createBillingPlanService(db: Knex) {
  const plans = createBillingPlanRepository(db);
  const contracts = createContractRepository(db);
  const meters = createMeterRepository(db);
  const skus = createSkuRepository(db);

  /** An item's meter and SKU must be the organisation's own: another's answers as a missing one, 404. */
  async function assertReferences(organisationId: string, items: PlanItemInput[]): Promise<void> {
    for (const item of items) {
      if (item.meterId) orNotFound(await meters.findById(organisationId, item.meterId), 'Meter');
      if (item.skuId) orNotFound(await skus.findById(organisationId, item.skuId), 'SKU');
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
      await assertReferences(organisationId, body.items);
      return plans.create(organisationId, body);
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<Plan>> {
      return plans.list(organisationId, paging);
    },

    async update(organisationId: string, id: string, changes: z.output<typeof updatePlanBody>): Promise<Plan> {
      if (!(await plans.update(organisationId, id, changes))) throw AppError.notFound('Billing plan');
      return get(organisationId, id);
    },

    /** Refused while a contract bills the plan (the foreign key would refuse it too). */
    async delete(organisationId: string, id: string): Promise<void> {
      if (await contracts.planInUse(organisationId, id)) throw AppError.conflict('A contract uses this plan');
      if (!(await plans.delete(organisationId, id))) throw AppError.notFound('Billing plan');
    },

    async addItem(organisationId: string, planId: string, item: PlanItemInput): Promise<PlanItem> {
      await get(organisationId, planId);
      assertPriceable([item], 'body');
      await assertReferences(organisationId, [item]);
      return plans.addItem(organisationId, planId, item);
    },

    /** Refused while a milestone names the item. */
    async deleteItem(organisationId: string, planId: string, itemId: string): Promise<void> {
      if (await contracts.planItemInUse(organisationId, itemId)) throw AppError.conflict('A milestone names this plan item');
      if (!(await plans.deleteItem(organisationId, planId, itemId))) throw AppError.notFound('Plan item');
    },
  };
}

export type BillingPlanService = ReturnType<typeof createBillingPlanService>;
