import type { AppDeps } from '../../deps';
import { documented } from '../../http/openapi';
import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { idParam } from '../../http/schemas';
import { createRunBody, currentUsageQuery, currentUsageSchema, runListQuery, runSchema, upcomingQuery, upcomingSchema } from './invoice-runs.schemas';

export function invoiceRunRoutes(deps: AppDeps): Route[] {
  const runs = deps.services.invoiceRunControl;

  return [
    defineRoute({
      method: 'post',
      path: '/invoice-runs',
      summary: 'Bill every contract with something due on the billing date (or the contracts named) into draft invoices; dryRun stores none',
      tag: 'Invoice runs',
      access: requires('InvoiceRunService:createInvoiceRun'),
      body: createRunBody,
      response: runSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => runs.start(auth.organisationId, auth.subjectId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/invoice-runs',
      summary: 'Invoice runs, latest first',
      tag: 'Invoice runs',
      access: requires('InvoiceRunService:getInvoiceRuns'),
      query: runListQuery,
      response: pageOf(runSchema),
      handler: async ({ query, auth }) => runs.list(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/invoice-runs/{id}',
      summary: "A run's status, progress, totals per currency, failures and invoices",
      tag: 'Invoice runs',
      access: requires('InvoiceRunService:getInvoiceRuns'),
      params: idParam,
      response: runSchema,
      handler: async ({ params, auth }) => runs.view(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'post',
      path: '/invoice-runs/{id}/retry',
      summary: "Bill the run's failed contracts again (409 while it runs or when none failed)",
      tag: 'Invoice runs',
      access: requires('InvoiceRunService:createInvoiceRun'),
      params: idParam,
      response: runSchema,
      handler: async ({ params, auth }) => runs.retry(auth.organisationId, params.id),
    }),
    documented(
      defineRoute({
        method: 'get',
        path: '/contracts/{id}/upcoming-invoice',
        summary: 'The invoices a run on the date would create for the contract, one per contract plan with something due; nothing is stored',
        tag: 'Invoice runs',
        access: requires('ContractService:getContractById'),
        params: idParam,
        query: upcomingQuery,
        response: upcomingSchema,
        handler: async ({ params, query, auth }) => runs.upcoming(auth.organisationId, params.id, query.date),
      }),
      {
        errors: {
          409: "A contract plan's invoice could not be made as a run would make it: a plan item's meter no longer exists, or a line, the subtotal or the total with the contract's taxes would pass the 20 digits before the point an invoice holds",
          422: 'An invoice would be in another currency than the base currency, with no FX rate effective on the date: code 1012, the message names the currencies (from/to) and the date',
        },
      },
    ),
    defineRoute({
      method: 'get',
      path: '/contracts/{id}/current-usage',
      summary: "The usage charges of the contract's billing period that holds the date, through now, per contract plan: the lines, their pre-tax total, what earlier documents charged and what an invoice made now would bill; nothing is stored",
      tag: 'Invoice runs',
      access: requires('ContractService:getContractById'),
      params: idParam,
      query: currentUsageQuery,
      response: currentUsageSchema,
      handler: async ({ params, query, auth }) => runs.currentUsage(auth.organisationId, params.id, query.date),
    }),
  ];
}
