import data from './data/iso-3166.json';

export interface Country {
  /** ISO 3166-1 alpha-2 */
  code: string;
  alpha3: string;
  numeric: string;
  name: string;
}

export interface Subdivision {
  /** ISO 3166-2, e.g. `US-CA` */
  code: string;
  name: string;
  countryCode: string;
  /** The enclosing subdivision for second-level ones (e.g. `GB-NIR` for `GB-BFS`); null when directly under the country. */
  parentCode: string | null;
}

// Read-only ISO 3166 data shipped with the code (see data/): it changes with releases, not at run time.
const COUNTRIES: readonly Country[] = data.countries;
const COUNTRY_BY_CODE = new Map(COUNTRIES.map((country) => [country.code, country]));

/** Every ISO 3166-1 alpha-2 code of the list, for the schemas that take a country. */
export const COUNTRY_CODES = COUNTRIES.map((country) => country.code) as [string, ...string[]];

const SUBDIVISIONS_BY_COUNTRY = new Map<string, Subdivision[]>();
for (const entry of data.subdivisions) {
  const countryCode = entry.code.slice(0, 2);
  const list = SUBDIVISIONS_BY_COUNTRY.get(countryCode) ?? [];
  list.push({ code: entry.code, name: entry.name, countryCode, parentCode: entry.parent === countryCode ? null : entry.parent });
  SUBDIVISIONS_BY_COUNTRY.set(countryCode, list);
}

export function listCountries(): readonly Country[] {
  return COUNTRIES;
}

/** Case-insensitive ISO 3166-1 alpha-2 lookup, for other modules that validate country codes. */
export function findCountry(code: string): Country | undefined {
  return COUNTRY_BY_CODE.get(code.toUpperCase());
}

export function listSubdivisions(countryCode: string): readonly Subdivision[] {
  return SUBDIVISIONS_BY_COUNTRY.get(countryCode.toUpperCase()) ?? [];
}
