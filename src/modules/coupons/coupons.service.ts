import type { Knex } from 'knex';
import { isUniqueViolation } from '../../db/knex';
import { currencyMinorUnits } from '../../domain/currencies';
import { servesAnotherPeriod } from '../../domain/discounts';
import { AppError, orNotFound } from '../../domain/errors';
import { formatAmount, formatExactOrNull, hasAtMostMinorUnits } from '../../domain/money';
import type { Page, PageQuery } from '../../http/paging';
import { contractsIn } from '../contracts';
import { COUPON_CODE_UNIQUE, createCouponRepository, type ActiveContractCoupon, type CouponRow } from './coupons.repository';
import type { ContractCouponView, CouponView, CreateCouponBody, UpdateCouponBody } from './coupons.schemas';

export function toCoupon(row: CouponRow): CouponView {
  return {
    id: row.id,
    code: row.code,
    name: row.name,
    percentOff: formatExactOrNull(row.percent_off),
    amountOff: row.amount_off === null ? null : formatAmount(row.amount_off, row.currency!),
    currency: row.currency,
    duration: row.duration,
    durationPeriods: row.duration_periods,
    maxRedemptions: row.max_redemptions,
    redemptions: row.redemptions,
    expiresAt: row.expires_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function toContractCoupon(row: ActiveContractCoupon): ContractCouponView {
  const coupon = { duration: row.coupon.duration, durationPeriods: row.coupon.duration_periods };
  return {
    id: row.id,
    contractId: row.contract_id,
    coupon: toCoupon(row.coupon),
    periodsUsed: row.periods_used,
    active: row.removed_at === null && servesAnotherPeriod(coupon, row.periods_used),
    createdAt: row.created_at.toISOString(),
  };
}

/** Coupons (Admin manages them) and the contracts they are applied to (SystemUser applies them). */
export function createCouponService(db: Knex) {
  const coupons = createCouponRepository(db);
  const found = async (organisationId: string, id: string) => orNotFound(await coupons.find(organisationId, id), 'Coupon');

  return {
    async create(organisationId: string, input: CreateCouponBody): Promise<CouponView> {
      if (input.amountOff !== undefined && !hasAtMostMinorUnits(input.amountOff, input.currency!)) {
        throw AppError.validation(`${input.currency} amounts carry at most ${currencyMinorUnits(input.currency!)} decimal places`, 'body.amountOff');
      }
      // A coupon born expired could never be applied: that is a mistake, not a coupon.
      if (input.expiresAt && new Date(input.expiresAt).getTime() <= Date.now()) throw AppError.validation('must be in the future: a coupon that has already expired can never be applied', 'body.expiresAt');
      try {
        return toCoupon(
          await coupons.insert(organisationId, {
            code: input.code,
            name: input.name ?? null,
            percent_off: input.percentOff ?? null,
            amount_off: input.amountOff ?? null,
            currency: input.currency ?? null,
            duration: input.duration,
            duration_periods: input.durationPeriods ?? null,
            max_redemptions: input.maxRedemptions ?? null,
            expires_at: input.expiresAt ? new Date(input.expiresAt) : null,
          }),
        );
      } catch (error) {
        if (isUniqueViolation(error, COUPON_CODE_UNIQUE)) throw AppError.conflict(`a coupon with the code ${input.code} exists`);
        throw error;
      }
    },

    async get(organisationId: string, id: string): Promise<CouponView> {
      return toCoupon(await found(organisationId, id));
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<CouponView>> {
      const page = await coupons.list(organisationId, paging);
      return { ...page, items: page.items.map(toCoupon) };
    },

    async update(organisationId: string, id: string, input: UpdateCouponBody): Promise<CouponView> {
      return db.transaction(async (trx) => {
        const repository = createCouponRepository(trx);
        const current = orNotFound(await repository.lock(organisationId, id), 'Coupon');
        if (input.maxRedemptions !== undefined && input.maxRedemptions !== null && input.maxRedemptions < current.redemptions) {
          throw AppError.conflict(`the coupon was redeemed ${current.redemptions} times already`);
        }
        const expiresAt = input.expiresAt === undefined ? undefined : input.expiresAt === null ? null : new Date(input.expiresAt);
        const row = await repository.update(organisationId, id, { name: input.name, max_redemptions: input.maxRedemptions, expires_at: expiresAt });
        return toCoupon(row!);
      });
    },

    /** Deleted coupons are applied to no more contracts; those that have one keep it. */
    async delete(organisationId: string, id: string): Promise<void> {
      if (!(await coupons.softDelete(organisationId, id))) throw AppError.notFound('Coupon');
    },

    /**
     * One redemption, counted under the coupon's lock, so `maxRedemptions` holds under concurrency. A
     * redemption belongs to the contract and the coupon: applied again to a contract it was removed from,
     * the coupon counts none and serves only the periods it has not served there.
     */
    async apply(organisationId: string, contractId: string, code: string): Promise<ContractCouponView> {
      return db.transaction(async (trx) => {
        const repository = createCouponRepository(trx);
        const contract = orNotFound(await contractsIn(trx).find(organisationId, contractId), 'Contract');
        if (contract.status === 'ended' || contract.status === 'terminated') throw AppError.conflict(`the contract is ${contract.status}`);
        const unlocked = await repository.findByCode(organisationId, code);
        if (!unlocked) throw AppError.validation('no coupon with this code', 'body.code');
        const coupon = await repository.lock(organisationId, unlocked.id);
        if (!coupon) throw AppError.validation('no coupon with this code', 'body.code');
        if (coupon.expires_at && coupon.expires_at.getTime() <= Date.now()) throw AppError.conflict(`the coupon ${code} expired at ${coupon.expires_at.toISOString()}`);
        const served = await repository.servedOn(contractId, coupon.id);
        const redeemed = served !== undefined;
        if (!redeemed && coupon.max_redemptions !== null && coupon.redemptions >= coupon.max_redemptions) throw AppError.conflict(`the coupon ${code} was redeemed its ${coupon.max_redemptions} times`);
        if (coupon.currency !== null && coupon.currency !== contract.currency) throw AppError.conflict(`the coupon is in ${coupon.currency}, the contract in ${contract.currency}`);
        let attached;
        try {
          attached = await repository.attach(organisationId, contractId, coupon.id);
        } catch (error) {
          if (isUniqueViolation(error)) throw AppError.conflict(`the coupon ${code} is on the contract already`);
          throw error;
        }
        if (!redeemed) await repository.countRedemption(coupon.id);
        return toContractCoupon({ ...attached, periods_used: served ?? 0, coupon: { ...coupon, redemptions: coupon.redemptions + (redeemed ? 0 : 1) } });
      });
    },

    async onContract(organisationId: string, contractId: string): Promise<ContractCouponView[]> {
      orNotFound(await contractsIn(db).find(organisationId, contractId), 'Contract');
      return (await coupons.onContract(organisationId, contractId)).map(toContractCoupon);
    },

    async remove(organisationId: string, contractId: string, contractCouponId: string): Promise<void> {
      if (!(await coupons.remove(organisationId, contractId, contractCouponId))) throw AppError.notFound('Contract coupon');
    },
  };
}

export type CouponService = ReturnType<typeof createCouponService>;
