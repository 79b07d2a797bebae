import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { idParam, isoDate } from '../../http/schemas';

export const chargeSchema = z.object({
  id: z.string(),
  contractPlanId: z.string(),
  planItemId: z.string(),
  kind: z.enum(['fee', 'usage']),
  fromDate: isoDate.describe('the first day charged (a fee) or of the usage window'),
  toDate: isoDate,
  periodFrom: z.string().describe('the billing period the days belong to'),
  periodTo: z.string(),
  quantity: z.string().nullable().describe('usage only: the units charged'),
  amount: z.string().describe('what the line charged for these days, before discount and tax'),
  discount: z.string().describe("the charge's share of the coupon discounts on its plan item"),
  tax: z.string().nullable().describe('its taxes, once the invoice is raised; null before'),
  invoiceId: z.string(),
  dimensions: z
    .record(z.string(), z.string().nullable())
    .nullable()
    .describe("usage of an item with prices per dimension value: the price entry charged (its match, {} for the item's own price, or the values nothing prices); null otherwise"),
});

export function chargeRoutes(deps: AppDeps): Route[] {
  const charges = deps.services.charges;
  return [
    defineRoute({
      method: 'get',
      path: '/contracts/{id}/charges',
      summary: "The contract's charge ledger: what each invoice charged for which days or usage window, at what net and tax, newest first",
      tag: 'Contracts',
      access: requires('ContractService:getContractById'),
      params: idParam,
      query: pageQuery,
      response: pageOf(chargeSchema),
      handler: async ({ params, query, auth }) => charges.listForContract(auth.organisationId, params.id, query),
    }),
  ];
}
