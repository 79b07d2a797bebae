import { defineRoute, requires, type Route } from '../../http/route';
import { idParam } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { addCreditsBody, creditEntrySchema, creditsQuery, creditsSchema } from './credits.schemas';

const TAG = 'Credits';

export function creditRoutes(deps: AppDeps): Route[] {
  const { credits, creditGrants } = deps.services;
  return [
    defineRoute({
      method: 'get',
      path: '/customers/{id}/credits',
      summary: "A customer's credit balance in each currency, the credit it is made of (with expiry), and its ledger (grants, purchases, credit notes, consumption, expiry), newest first",
      tag: TAG,
      access: requires('CreditService:getCredits'),
      params: idParam,
      query: creditsQuery,
      response: creditsSchema,
      handler: async ({ params, query, auth }) => credits.get(auth.organisationId, params.id, { currency: query.currency }, query),
    }),
    defineRoute({
      method: 'post',
      path: '/customers/{id}/credits',
      summary: 'Add credit to a customer: a grant, or a prepaid purchase, expiring or not',
      tag: TAG,
      access: requires('CreditService:addCredits'),
      params: idParam,
      body: addCreditsBody,
      response: creditEntrySchema,
      successStatus: 201,
      handler: async ({ params, body, auth }) => creditGrants.add(auth.organisationId, params.id, body),
    }),
  ];
}
