import { pageOf } from '../../http/paging';
import { documented } from '../../http/openapi';
import { defineRoute, requires, type Route } from '../../http/route';
import { idParam } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import {
  conversionSchema,
  convertQuery,
  createFxRateBody,
  effectiveRateQuery,
  effectiveRateSchema,
  fxRateListQuery,
  fxRateSchema,
  updateFxRateBody,
} from './fx-rates.schemas';

export function fxRateRoutes(deps: AppDeps): Route[] {
  const service = deps.services.fxRates;

  return [
    defineRoute({
      method: 'post',
      path: '/fx-rates',
      summary: 'Record the rate of a currency pair from a day on; one rate per pair and day',
      tag: 'FX rates',
      access: requires('FxRateService:createFxRate'),
      body: createFxRateBody,
      response: fxRateSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => service.create(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/fx-rates',
      summary: 'List rates, latest effectiveDate first, optionally of one from and/or to currency',
      tag: 'FX rates',
      access: requires('FxRateService:getFxRates'),
      query: fxRateListQuery,
      response: pageOf(fxRateSchema),
      handler: async ({ query, auth }) =>
        service.list(auth.organisationId, query, { fromCurrency: query.fromCurrency, toCurrency: query.toCurrency }),
    }),
    // The literal segments are declared before /fx-rates/{id} so that they are never read as ids.
    documented(
      defineRoute({
        method: 'get',
        path: '/fx-rates/effective',
        summary: "The rate in force on a day: the pair's latest on or before it, else the inverse of the opposite pair's",
        tag: 'FX rates',
        access: requires('FxRateService:getFxRates'),
        query: effectiveRateQuery,
        response: effectiveRateSchema,
        handler: async ({ query, auth }) => service.effective(auth.organisationId, query.from, query.to, query.date),
      }),
      { errors: { 404: 'No rate of the pair, nor of the opposite pair, is in force on that day' } },
    ),
    documented(
      defineRoute({
        method: 'get',
        path: '/fx-rates/convert',
        summary: "Convert an amount at the rate in force on a day, rounded half-up to the target currency's minor unit",
        tag: 'FX rates',
        access: requires('FxRateService:getFxRates'),
        query: convertQuery,
        response: conversionSchema,
        handler: async ({ query, auth }) => service.convert(auth.organisationId, query),
      }),
      { errors: { 404: 'No rate of the pair, nor of the opposite pair, is in force on that day' } },
    ),
    defineRoute({
      method: 'get',
      path: '/fx-rates/{id}',
      summary: 'Read a rate',
      tag: 'FX rates',
      access: requires('FxRateService:getFxRates'),
      params: idParam,
      response: fxRateSchema,
      handler: async ({ params, auth }) => service.getById(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/fx-rates/{id}',
      summary: "Correct a rate's value or effectiveDate; the currencies of a rate never change",
      tag: 'FX rates',
      access: requires('FxRateService:updateFxRate'),
      params: idParam,
      body: updateFxRateBody,
      response: fxRateSchema,
      handler: async ({ params, body, auth }) => service.update(auth.organisationId, params.id, body),
    }),
  ];
}
