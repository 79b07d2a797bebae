import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { DomainError } from '../../domain/errors';
import { isCurrency } from '../../domain/currencies';
import { validatePlanItemPricing } from '../../domain/pricing';
import { AppError } from '../../domain/errors';
import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam } from '../../http/schemas';
import { createBillingPlanRepository } from './billing-plans.repository';
import { createPlanBody, planItemInput, planItemSchema, planListQuery, planSchema, updatePlanBody } from './billing-plans.schemas';

type PlanItemInput = z.output<typeof planItemInput>;

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

export function billingPlanRoutes(deps: AppDeps): Route[] {
  const plans = createBillingPlanRepository(deps.db);

  async function findPlan(organisationId: string, id: string) {
    const plan = await plans.find(organisationId, id);
    if (!plan) throw AppError.notFound('Billing plan');
    return plan;
  }

  return [
    defineRoute({
      method: 'post',
      path: '/billing/plans',
      summary: 'Create a billing plan with its items (Admin only)',
      tag: 'Billing plans',
      access: requires('BillingPlanService:createPlan'),
      body: createPlanBody,
      response: planSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => {
        if (!isCurrency(body.currency)) throw AppError.validation(`${body.currency} is not an ISO 4217 currency`, 'body.currency');
        assertPriceable(body.items, 'body.items');
        return plans.create(auth.organisationId, body);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/billing/plans',
      summary: 'List billing plans (Admin only: SystemUser reads a plan by id)',
      tag: 'Billing plans',
      access: requires('BillingPlanService:getPlans'),
      query: planListQuery,
      response: pageOf(planSchema),
      handler: async ({ query, auth }) => plans.list(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/billing/plans/{id}',
      summary: 'Read a billing plan with its items',
      tag: 'Billing plans',
      access: requires('BillingPlanService:getPlanById'),
      params: idParam,
      response: planSchema,
      handler: async ({ params, auth }) => findPlan(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/billing/plans/{id}',
      summary: 'Rename a plan or change its billing period (Admin only)',
      tag: 'Billing plans',
      access: requires('BillingPlanService:updatePlan'),
      params: idParam,
      body: updatePlanBody,
      response: planSchema,
      handler: async ({ params, body, auth }) => {
        if (!(await plans.update(auth.organisationId, params.id, body))) throw AppError.notFound('Billing plan');
        return findPlan(auth.organisationId, params.id);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/billing/plans/{id}',
      summary: 'Delete a plan no contract uses (Admin only; 409 while in use)',
      tag: 'Billing plans',
      access: requires('BillingPlanService:deletePlan'),
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        const outcome = await plans.delete(auth.organisationId, params.id);
        if (!outcome) throw AppError.notFound('Billing plan');
        if (outcome === 'in_use') throw AppError.conflict('A contract uses this plan');
        return { id: params.id, deleted: true };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/billing/plans/{id}/items',
      summary: 'Add an item to a plan (Admin only)',
      tag: 'Billing plans',
      access: requires('BillingPlanService:createPlanItem'),
      params: idParam,
      body: planItemInput,
      response: planItemSchema,
      successStatus: 201,
      handler: async ({ params, body, auth }) => {
        await findPlan(auth.organisationId, params.id);
        assertPriceable([body], 'body');
        return plans.addItem(auth.organisationId, params.id, body);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/billing/plans/{id}/items/{itemId}',
      summary: 'Delete a plan item (409 while a milestone names it)',
      tag: 'Billing plans',
      access: requires('BillingPlanService:deletePlanItem'),
      params: z.object({ id: z.string().min(1).max(64), itemId: z.string().min(1).max(64) }),
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        const outcome = await plans.deleteItem(auth.organisationId, params.id, params.itemId);
        if (!outcome) throw AppError.notFound('Plan item');
        if (outcome === 'in_use') throw AppError.conflict('A milestone names this plan item');
        return { id: params.itemId, deleted: true };
      },
    }),
  ];
}
