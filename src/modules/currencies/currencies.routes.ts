import { listCurrencies } from '../../domain/currencies';
import { orNotFound } from '../../domain/errors';
import { pageOf, pageQuery } from '../../http/paging';
import { documented } from '../../http/openapi';
import { defineRoute, requires, type Route } from '../../http/route';
import type { AppDeps } from '../../deps';
import { pageInMemory } from '../geography';
import { currencyCodeParam, currencySchema } from './currencies.schemas';

export function currencyRoutes(_deps: AppDeps): Route[] {
  // Answered from data in memory: no dependency can be down.
  return [
    defineRoute({
      method: 'get',
      path: '/currencies',
      summary: 'List ISO 4217 currencies with their minor units; search matches code or name',
      tag: 'Currencies',
      access: requires('CurrencyService:getCurrencies'),
      query: pageQuery,
      response: pageOf(currencySchema),
      handler: async ({ query }) => pageInMemory(listCurrencies(), query, [(c) => c.code, (c) => c.name]),
    }),
    defineRoute({
      method: 'get',
      path: '/currencies/{code}',
      summary: 'Read a currency and its minor units',
      tag: 'Currencies',
      access: requires('CurrencyService:getCurrencies'),
      params: currencyCodeParam,
      response: currencySchema,
      handler: async ({ params }) => {
        const code = params.code.toUpperCase();
        return orNotFound(listCurrencies().find((c) => c.code === code), 'Currency');
      },
    }),
  ].map((route) => documented(route, { never: [503] }));
}
