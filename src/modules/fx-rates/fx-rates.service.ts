import type { Knex } from 'knex';
import { organisationToday } from '../organisation-settings';
import { isUniqueViolation } from '../../db/knex';
import { convert } from '../../domain/fx';
import { formatAmount } from '../../domain/money';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import {
  FX_RATE_PAIR_DATE_UNIQUE,
  createFxRateRepository,
  findEffectiveRate,
  toFxRate,
  type EffectiveRate,
  type FxRate,
} from './fx-rates.repository';
import type { CreateFxRateBody, UpdateFxRateBody } from './fx-rates.schemas';

const duplicatePairDate = (error: unknown): never => {
  if (isUniqueViolation(error, FX_RATE_PAIR_DATE_UNIQUE)) throw AppError.conflict('A rate for this currency pair and effectiveDate exists');
  throw error;
};

export interface Conversion {
  amount: string;
  from: string;
  to: string;
  date: string;
  rate: string;
  inverted: boolean;
  effectiveDate: string | null;
  converted: string;
}

export function createFxRateService(db: Knex) {
  const rates = createFxRateRepository(db);

  /** On `date`, by default today in the organisation's time zone. */
  async function effective(organisationId: string, from: string, to: string, asked?: string): Promise<EffectiveRate> {
    const date = asked ?? (await organisationToday(db, organisationId));
    return orNotFound(await findEffectiveRate(db, organisationId, from, to, date), `FX rate ${from}→${to} effective on ${date}`);
  }

  return {
    async create(organisationId: string, input: CreateFxRateBody): Promise<FxRate> {
      return toFxRate(await rates.insert(organisationId, input).catch(duplicatePairDate));
    },

    async getById(organisationId: string, id: string): Promise<FxRate> {
      return toFxRate(orNotFound(await rates.findById(organisationId, id), 'FX rate'));
    },

    async list(organisationId: string, paging: PageQuery, filter: { fromCurrency?: string; toCurrency?: string }): Promise<Page<FxRate>> {
      return rates.list(organisationId, paging, filter);
    },

    async update(organisationId: string, id: string, input: UpdateFxRateBody): Promise<FxRate> {
      const row = await rates.update(organisationId, id, { rate: input.rate, effective_date: input.effectiveDate }).catch(duplicatePairDate);
      return toFxRate(orNotFound(row, 'FX rate'));
    },

    effective,

    async convert(organisationId: string, query: { amount: string; from: string; to: string; date?: string }): Promise<Conversion> {
      const rate = await effective(organisationId, query.from, query.to, query.date);
      return {
        amount: query.amount,
        from: query.from,
        to: query.to,
        date: rate.date,
        rate: rate.rate,
        inverted: rate.inverted,
        effectiveDate: rate.effectiveDate,
        converted: formatAmount(convert(query.amount, rate.rate, query.to), query.to),
      };
    },
  };
}

export type FxRateService = ReturnType<typeof createFxRateService>;
