import type { Knex } from 'knex';
import { createCouponRepository } from './coupons.repository';

export type { ActiveContractCoupon } from './coupons.repository';
export { createCouponService } from './coupons.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type CouponAccess = Pick<ReturnType<typeof createCouponRepository>, 'countPeriods' | 'onContracts' | 'percentOffOf'>;
export const couponsIn = (db: Knex): CouponAccess => createCouponRepository(db);
