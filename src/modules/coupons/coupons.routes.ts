import { z } from 'zod';
import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deleted, deletedSchema, idParam } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { applyCouponBody, contractCouponParams, contractCouponSchema, couponListQuery, couponSchema, createCouponBody, updateCouponBody } from './coupons.schemas';

const TAG = 'Coupons';
const manage = requires('CouponService:manageCoupons');
const read = requires('CouponService:getCoupons');

export function couponRoutes(deps: AppDeps): Route[] {
  const { coupons } = deps.services;
  return [
    defineRoute({
      method: 'post',
      path: '/coupons',
      summary: 'Create a coupon: a percentage or an amount off, once, for N billing periods, or for ever',
      tag: TAG,
      access: manage,
      body: createCouponBody,
      response: couponSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => coupons.create(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/coupons',
      summary: 'List coupons, newest first',
      tag: TAG,
      access: read,
      query: couponListQuery,
      response: pageOf(couponSchema),
      handler: async ({ query, auth }) => coupons.list(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/coupons/{id}',
      summary: 'Read a coupon with its redemptions',
      tag: TAG,
      access: read,
      params: idParam,
      response: couponSchema,
      handler: async ({ params, auth }) => coupons.get(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/coupons/{id}',
      summary: "Change a coupon's name, redemption limit or expiry (what it takes off never changes)",
      tag: TAG,
      access: manage,
      params: idParam,
      body: updateCouponBody,
      response: couponSchema,
      handler: async ({ params, body, auth }) => coupons.update(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/coupons/{id}',
      summary: 'Delete a coupon: no more contracts can get it; those that have it keep it',
      tag: TAG,
      access: manage,
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await coupons.delete(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/contracts/{id}/coupons',
      summary: "Apply a coupon to a contract by its code: invoice runs take its discount off the contract's invoices, before taxes",
      tag: TAG,
      access: requires('ContractService:applyCoupon'),
      params: idParam,
      body: applyCouponBody,
      response: contractCouponSchema,
      successStatus: 201,
      handler: async ({ params, body, auth }) => coupons.apply(auth.organisationId, params.id, body.code),
    }),
    defineRoute({
      method: 'get',
      path: '/contracts/{id}/coupons',
      summary: 'The coupons applied to a contract, with the periods each has served',
      tag: TAG,
      access: requires('ContractService:getContractById'),
      params: idParam,
      response: z.array(contractCouponSchema),
      handler: async ({ params, auth }) => coupons.onContract(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'delete',
      path: '/contracts/{id}/coupons/{contractCouponId}',
      summary: 'Take a coupon off a contract: later invoice runs no longer apply it',
      tag: TAG,
      access: requires('ContractService:applyCoupon'),
      params: contractCouponParams,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await coupons.remove(auth.organisationId, params.id, params.contractCouponId);
        return deleted(params.contractCouponId);
      },
    }),
  ];
}
