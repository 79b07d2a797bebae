import { orNotFound } from '../../domain/errors';
import { pageOf, pageQuery } from '../../http/paging';
import { documented } from '../../http/openapi';
import { defineRoute, requires, type Route } from '../../http/route';
import type { AppDeps } from '../../deps';
import { findCountry, listCountries, listSubdivisions } from './geography.repository';
import { countryCodeParam, countrySchema, subdivisionSchema } from './geography.schemas';
import { pageInMemory } from './in-memory-page';

export function geographyRoutes(_deps: AppDeps): Route[] {
  // Answered from data in memory: no dependency can be down.
  return [
    defineRoute({
      method: 'get',
      path: '/geography/countries',
      summary: 'List ISO 3166-1 countries by code; search matches name, alpha-2 or alpha-3 code',
      tag: 'Geography',
      access: requires('GeographyService:getCountries'),
      query: pageQuery,
      response: pageOf(countrySchema),
      handler: async ({ query }) => pageInMemory(listCountries(), query, [(c) => c.name, (c) => c.code, (c) => c.alpha3]),
    }),
    defineRoute({
      method: 'get',
      path: '/geography/countries/{code}/states',
      summary: "List a country's ISO 3166-2 subdivisions by code; search matches name or code",
      tag: 'Geography',
      access: requires('GeographyService:getStates'),
      params: countryCodeParam,
      query: pageQuery,
      response: pageOf(subdivisionSchema),
      handler: async ({ params, query }) => {
        const country = orNotFound(findCountry(params.code), 'Country');
        return pageInMemory(listSubdivisions(country.code), query, [(s) => s.name, (s) => s.code]);
      },
    }),
  ].map((route) => documented(route, { never: [503] }));
}
