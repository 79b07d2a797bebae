import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { invertRate } from '../../domain/fx';
import { formatExact } from '../../domain/money';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import { calendarDay } from '../../db/dates';

export const FX_RATE_PAIR_DATE_UNIQUE = 'fx_rates_pair_date_unique';

export interface FxRateRow {
  id: string;
  organisation_id: string;
  from_currency: string;
  to_currency: string;
  /** NUMERIC(30,12) as the driver returns it, e.g. `0.920000000000`. */
  rate: string;
  effective_date: Date;
  created_at: Date;
  updated_at: Date;
}

export interface FxRate {
  id: string;
  fromCurrency: string;
  toCurrency: string;
  rate: string;
  effectiveDate: string;
  createdAt: string;
  updatedAt: string;
}

export interface NewFxRate {
  fromCurrency: string;
  toCurrency: string;
  rate: string;
  effectiveDate: string;
}

export interface FxRatePatch {
  rate?: string;
  effective_date?: string;
}

export interface EffectiveRate {
  from: string;
  to: string;
  /** The day asked about. */
  date: string;
  /** Units of `to` for one unit of `from`, as a decimal string. */
  rate: string;
  /** True when only the opposite pair had a rate and this is its inverse. */
  inverted: boolean;
  /** The stored rate used; null when from and to are the same currency. */
  fxRateId: string | null;
  effectiveDate: string | null;
}


/** Drops the NUMERIC scale's trailing zeros: `0.920000000000` → `0.92`. */
export function normaliseRate(rate: string): string {
  return formatExact(rate);
}

export function toFxRate(row: FxRateRow): FxRate {
  return {
    id: row.id,
    fromCurrency: row.from_currency,
    toCurrency: row.to_currency,
    rate: normaliseRate(row.rate),
    effectiveDate: calendarDay(row.effective_date),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * The rate in force on `date` (YYYY-MM-DD): the pair's latest rate effective on or before that day.
 * When the pair has none, the opposite pair's latest is inverted; the same currency is always 1.
 * Exported for invoicing, which converts at the invoice date; undefined when no rate applies.
 */
export async function findEffectiveRate(
  db: Knex,
  organisationId: string,
  from: string,
  to: string,
  date: string,
): Promise<EffectiveRate | undefined> {
  if (from === to) return { from, to, date, rate: '1', inverted: false, fxRateId: null, effectiveDate: null };
  const row = await db<FxRateRow>('fx_rates')
    .where({ organisation_id: organisationId })
    .where((pair) => pair.where({ from_currency: from, to_currency: to }).orWhere({ from_currency: to, to_currency: from }))
    .where('effective_date', '<=', date)
    // The pair as asked wins over its inverse whatever their dates; then the latest day.
    .orderByRaw('(from_currency = ?) DESC, effective_date DESC', [from])
    .first();
  if (!row) return undefined;
  const inverted = row.from_currency !== from;
  const rate = normaliseRate(row.rate);
  return {
    from,
    to,
    date,
    rate: inverted ? invertRate(rate).toFixed() : rate,
    inverted,
    fxRateId: row.id,
    effectiveDate: calendarDay(row.effective_date),
  };
}

export function createFxRateRepository(db: Knex) {
  const scoped = (organisationId: string) => db<FxRateRow>('fx_rates').where({ organisation_id: organisationId });

  return {
    async insert(organisationId: string, input: NewFxRate): Promise<FxRateRow> {
      // Untyped table: effective_date goes in as YYYY-MM-DD text and comes back as a Date.
      const [row] = (await db('fx_rates')
        .insert({
          id: newId('fx'),
          organisation_id: organisationId,
          from_currency: input.fromCurrency,
          to_currency: input.toCurrency,
          rate: input.rate,
          effective_date: input.effectiveDate,
        })
        .returning('*')) as FxRateRow[];
      return row!;
    },

    async findById(organisationId: string, id: string): Promise<FxRateRow | undefined> {
      return scoped(organisationId).where({ id }).first();
    },

    async list(organisationId: string, paging: PageQuery, filter: { fromCurrency?: string; toCurrency?: string }): Promise<Page<FxRate>> {
      const query = scoped(organisationId).select('*');
      if (filter.fromCurrency) query.where({ from_currency: filter.fromCurrency });
      if (filter.toCurrency) query.where({ to_currency: filter.toCurrency });
      return paginate<FxRateRow, FxRate>(query, paging, {
        searchColumns: ['from_currency', 'to_currency'],
        orderBy: [
          { column: 'effective_date', order: 'desc' },
          { column: 'from_currency', order: 'asc' },
          { column: 'to_currency', order: 'asc' },
          { column: 'id', order: 'asc' },
        ],
        map: toFxRate,
      });
    },

    async update(organisationId: string, id: string, patch: FxRatePatch): Promise<FxRateRow | undefined> {
      const [row] = (await db('fx_rates')
        .where({ organisation_id: organisationId, id })
        .update({ ...patch, updated_at: db.fn.now() })
        .returning('*')) as FxRateRow[];
      return row;
    },
  };
}

export type FxRateRepository = ReturnType<typeof createFxRateRepository>;
