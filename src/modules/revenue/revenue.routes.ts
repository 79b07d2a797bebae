import type { AppDeps } from '../../deps';
import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { revenueListQuery, revenueSchema, revenueSummaryQuery, revenueSummarySchema, syncRevenueBody, syncRevenueResult } from './revenue.schemas';

export function revenueRoutes(deps: AppDeps): Route[] {
  const { revenue, revenueSync } = deps.services;

  return [
    defineRoute({
      method: 'get',
      path: '/revenue/summary',
      summary: 'Revenue of a span of months per currency (recognised or collected, not reversed), with the customers that brought the most',
      tag: 'Revenue',
      access: requires('JobService:create', 'RevenueService:getRevenue'),
      query: revenueSummaryQuery,
      response: revenueSummarySchema,
      handler: async ({ query, auth }) => revenue.summary(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/revenue',
      summary: 'Revenue records, by period; search matches the invoice or item id, the status or the currency',
      tag: 'Revenue',
      access: requires('JobService:create', 'RevenueService:getRevenue'),
      query: revenueListQuery,
      response: pageOf(revenueSchema),
      handler: async ({ query, auth }) => revenue.list(auth.organisationId, { invoiceId: query.invoiceId }, query),
    }),
    defineRoute({
      method: 'post',
      path: '/revenue/sync',
      summary: "Re-derive an invoice item's revenue records from its invoice",
      tag: 'Revenue',
      access: requires('RevenueService:syncRevenueByInvoiceItem'),
      body: syncRevenueBody,
      response: syncRevenueResult,
      handler: async ({ body, auth }) => revenueSync.syncItem(auth.organisationId, body.invoiceItemId),
    }),
  ];
}
