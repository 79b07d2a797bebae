import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { withFormerNames } from '../../http/former-names';
import { COLLECTIONS_RENAMES } from './collections.service';
import { defineRoute, requires, type Route } from '../../http/route';
import { reference, isoDate } from '../../http/schemas';

const amount = z.string().describe('in the currency, to its minor unit');

const collectionsSchema = withFormerNames(z.object({
  asOfDate: isoDate.describe("YYYY-MM-DD: today in the customer's time zone for one customer, else the organisation's; each invoice's days past due are counted to today in its own customer's zone (else the organisation's)"),
  currencies: z.array(
    z.object({
      currency: z.string(),
      total: amount.describe('everything owed in the currency'),
      invoices: z.number().int().describe('raised and sent invoices in the currency'),
      buckets: z
        .object({ current: amount, '1-30': amount, '31-60': amount, '61-90': amount, '90+': amount })
        .describe('what is owed by days past the due date; current: not yet due'),
    }),
  ),
}), COLLECTIONS_RENAMES);

export function collectionRoutes(deps: AppDeps): Route[] {
  const { collections } = deps.services;

  return [
    defineRoute({
      method: 'get',
      path: '/collections',
      summary: 'What customers owe (all, or one): the totals of raised and sent invoices per currency, aged by days past their due date',
      tag: 'Collections',
      access: requires('InvoiceService:getInvoices'),
      query: z.object({ customerId: reference().optional().describe('only this customer’s invoices') }),
      response: collectionsSchema,
      handler: async ({ query, auth }) => collections.ageing(auth.organisationId, query),
    }),
  ];
}
