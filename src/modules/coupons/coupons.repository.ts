import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import type { Coupon } from '../../domain/discounts';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export interface CouponRow {
  id: string;
  organisation_id: string;
  code: string;
  name: string | null;
  percent_off: string | null;
  amount_off: string | null;
  currency: string | null;
  duration: Coupon['duration'];
  duration_periods: number | null;
  max_redemptions: number | null;
  redemptions: number;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface ContractCouponRow {
  id: string;
  organisation_id: string;
  contract_id: string;
  coupon_id: string;
  /** Periods served under this row; the coupon's on the contract are those of all its rows there. */
  periods_used: number;
  removed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewCoupon = Pick<CouponRow, 'code' | 'name' | 'percent_off' | 'amount_off' | 'currency' | 'duration' | 'duration_periods' | 'max_redemptions' | 'expires_at'>;

/**
 * A coupon on a contract, with what the coupon is, as invoice runs read them: `periods_used` counts every
 * period the coupon served on the contract, under this row and any removed before it.
 */
export type ActiveContractCoupon = ContractCouponRow & { coupon: CouponRow };

export const COUPON_CODE_UNIQUE = 'coupons_code_unique';

/** Coupons and the contracts they are applied to. `db` may be a transaction. */
export function createCouponRepository(db: Knex) {
  const live = (organisationId: string) => db<CouponRow>('coupons').where({ organisation_id: organisationId }).whereNull('deleted_at');

  return {
    async insert(organisationId: string, coupon: NewCoupon): Promise<CouponRow> {
      const [row] = await db<CouponRow>('coupons')
        .insert({ id: newId('cpn'), organisation_id: organisationId, ...coupon })
        .returning('*');
      return row!;
    },

    async find(organisationId: string, id: string): Promise<CouponRow | undefined> {
      return live(organisationId).where({ id }).first();
    },

    async findByCode(organisationId: string, code: string): Promise<CouponRow | undefined> {
      return live(organisationId).where({ code }).first();
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<CouponRow>> {
      return paginate<CouponRow, CouponRow>(live(organisationId).select('*'), paging, { searchColumns: ['code', 'name'], map: (row) => row });
    },

    async update(organisationId: string, id: string, changes: Partial<Pick<CouponRow, 'name' | 'max_redemptions' | 'expires_at'>>): Promise<CouponRow | undefined> {
      const [row] = await live(organisationId)
        .where({ id })
        .update({ ...changes, updated_at: db.fn.now() })
        .returning('*');
      return row;
    },

    async softDelete(organisationId: string, id: string): Promise<boolean> {
      return (await live(organisationId).where({ id }).update({ deleted_at: db.fn.now(), updated_at: db.fn.now() })) > 0;
    },

    /** Inside a transaction: the coupon under its row lock, so that redemptions are counted one at a time. */
    async lock(organisationId: string, id: string): Promise<CouponRow | undefined> {
      return live(organisationId).where({ id }).forUpdate().first();
    },

    async countRedemption(id: string): Promise<void> {
      await db('coupons').where({ id }).update({ redemptions: db.raw('redemptions + 1'), updated_at: db.fn.now() });
    },

    async attach(organisationId: string, contractId: string, couponId: string): Promise<ContractCouponRow> {
      const [row] = await db<ContractCouponRow>('contract_coupons')
        .insert({ id: newId('ccp'), organisation_id: organisationId, contract_id: contractId, coupon_id: couponId })
        .returning('*');
      return row!;
    },

    /** The percentage each of the coupons takes off, by id (null: an amount coupon); deleted ones too. */
    async percentOffOf(ids: readonly string[]): Promise<Map<string, string | null>> {
      if (ids.length === 0) return new Map();
      const rows = await db<CouponRow>('coupons').whereRaw('id = ANY(?)', [[...ids]]).select('id', 'percent_off');
      return new Map(rows.map((row) => [row.id, row.percent_off]));
    },

    async onContract(organisationId: string, contractId: string): Promise<ActiveContractCoupon[]> {
      return this.onContracts(organisationId, [contractId]);
    },

    /**
     * Periods the coupon served on the contract, over all the rows it had there; undefined if it was never
     * applied to it.
     */
    async servedOn(contractId: string, couponId: string): Promise<number | undefined> {
      const row = await db('contract_coupons').where({ contract_id: contractId, coupon_id: couponId }).first<{ periods: number | null }>(db.raw('sum(periods_used)::int AS periods'));
      return row?.periods ?? undefined;
    },

    /**
     * The coupons applied to the contracts and not removed, oldest first. The periods a coupon served
     * belong to it and the contract, not to one row: removed and applied again, it serves only what it
     * has not served there yet.
     */
    async onContracts(organisationId: string, contractIds: string[]): Promise<ActiveContractCoupon[]> {
      const rows = await db<ContractCouponRow>('contract_coupons')
        .where({ organisation_id: organisationId })
        .whereIn('contract_id', contractIds)
        .whereNull('removed_at')
        .orderBy(['created_at', 'id']);
      if (rows.length === 0) return [];
      const couponIds = [...new Set(rows.map((row) => row.coupon_id))];
      const coupons = new Map((await db<CouponRow>('coupons').whereIn('id', couponIds)).map((coupon) => [coupon.id, coupon]));
      const served = await db('contract_coupons')
        .whereIn('contract_id', [...new Set(rows.map((row) => row.contract_id))])
        .whereIn('coupon_id', couponIds)
        .groupBy('contract_id', 'coupon_id')
        .select<Array<{ contract_id: string; coupon_id: string; periods: number }>>('contract_id', 'coupon_id', db.raw('sum(periods_used)::int AS periods'));
      const periodsOf = new Map(served.map((row) => [`${row.contract_id}|${row.coupon_id}`, row.periods]));
      return rows.map((row) => ({ ...row, periods_used: periodsOf.get(`${row.contract_id}|${row.coupon_id}`)!, coupon: coupons.get(row.coupon_id)! }));
    },

    async remove(organisationId: string, contractId: string, id: string): Promise<boolean> {
      return (await db('contract_coupons').where({ organisation_id: organisationId, contract_id: contractId, id }).whereNull('removed_at').update({ removed_at: db.fn.now(), updated_at: db.fn.now() })) > 0;
    },

    /** An invoice run served these periods with each of these contract coupons. */
    async countPeriods(served: Array<{ id: string; periods: number }>): Promise<void> {
      for (const { id, periods } of served) {
        await db('contract_coupons').where({ id }).update({ periods_used: db.raw('periods_used + ?', [periods]), updated_at: db.fn.now() });
      }
    },
  };
}

export type CouponRepository = ReturnType<typeof createCouponRepository>;
