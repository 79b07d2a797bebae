import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted, reference } from '../../http/schemas';
import { addPlanItemQuery, createPlanBody, deletePlanItemQuery, planItemInput, planItemSchema, planListQuery, planSchema, updatePlanBody } from './billing-plans.schemas';

export function billingPlanRoutes(deps: AppDeps): Route[] {
  const plans = deps.services.billingPlans;

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
      handler: async ({ body, auth }) => plans.create(auth.organisationId, body),
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
      handler: async ({ params, auth }) => plans.get(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/billing/plans/{id}',
      summary: 'Rename a plan or change its billing period, from effectiveDate on once contracts use it (Admin only; 409 inside a span already charged)',
      tag: 'Billing plans',
      access: requires('BillingPlanService:updatePlan'),
      params: idParam,
      body: updatePlanBody,
      response: planSchema,
      handler: async ({ params, body, auth }) => plans.update(auth.organisationId, params.id, body),
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
        await plans.delete(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/billing/plans/{id}/items',
      summary: "Add an item to a plan, in force from effectiveDate (default on a plan in use: today in the organisation's time zone) (Admin only)",
      tag: 'Billing plans',
      access: requires('BillingPlanService:createPlanItem'),
      params: idParam,
      query: addPlanItemQuery,
      body: planItemInput,
      response: planItemSchema,
      successStatus: 201,
      handler: async ({ params, query, body, auth }) => plans.addItem(auth.organisationId, params.id, body, query.effectiveDate),
    }),
    defineRoute({
      method: 'delete',
      path: '/billing/plans/{id}/items/{itemId}',
      summary: 'Remove a plan item: on a plan in use it stays in force through the day before effectiveDate (409 while a milestone names it, or inside a span already charged)',
      tag: 'Billing plans',
      access: requires('BillingPlanService:deletePlanItem'),
      params: z.object({ id: reference(), itemId: reference() }),
      query: deletePlanItemQuery,
      response: deletedSchema,
      handler: async ({ params, query, auth }) => {
        await plans.deleteItem(auth.organisationId, params.id, params.itemId, query.effectiveDate);
        return deleted(params.itemId);
      },
    }),
  ];
}
