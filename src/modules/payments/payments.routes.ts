import type { Request } from 'express';
import { AppError, ERROR_CODES } from '../../domain/errors';
import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { createPaymentBody, idempotencyKey, paymentListQuery, paymentSchema, updatePaymentBody } from './payments.schemas';

function idempotencyKeyOf(req: Request): string | undefined {
  const header = req.header('Idempotency-Key');
  if (header === undefined) return undefined;
  const parsed = idempotencyKey.safeParse(header);
  if (!parsed.success) {
    const message = parsed.error.issues.map((issue) => issue.message).join('; ');
    throw new AppError('validation', 'Validation failed', [{ code: ERROR_CODES.validation, path: 'headers.idempotency-key', message }]);
  }
  return parsed.data;
}

export function paymentRoutes(deps: AppDeps): Route[] {
  const service = deps.services.payments;

  return [
    defineRoute({
      method: 'post',
      path: '/payments',
      summary:
        'Record a payment from a customer. With an Idempotency-Key header, a repeat of the same request returns the first payment (200, Idempotent-Replayed: true)',
      tag: 'Payments',
      access: requires('PaymentService:createPayment'),
      body: createPaymentBody,
      response: paymentSchema,
      successStatus: 201,
      handler: async ({ body, auth, req, res, setSuccessStatus }) => {
        const created = await service.create(auth.organisationId, body, idempotencyKeyOf(req));
        // A replay creates nothing: 200, and said so in Idempotent-Replayed (as Stripe does).
        if (created.replayed) {
          res.setHeader('Idempotent-Replayed', 'true');
          setSuccessStatus(200);
        }
        return created.payment;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/payments',
      summary: 'List payments, latest paidAt first, optionally of one customer and/or invoice; search matches reference, method or invoiceId',
      tag: 'Payments',
      access: requires('PaymentService:getPayments'),
      query: paymentListQuery,
      response: pageOf(paymentSchema),
      handler: async ({ query, auth }) =>
        service.list(auth.organisationId, query, { customerId: query.customerId, invoiceId: query.invoiceId }),
    }),
    defineRoute({
      method: 'get',
      path: '/payments/{id}',
      summary: 'Read a payment',
      tag: 'Payments',
      access: requires('PaymentService:getPayments'),
      params: idParam,
      response: paymentSchema,
      handler: async ({ params, auth }) => service.getById(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/payments/{id}',
      summary: "Change a payment's amount, paidAt, method or reference; its customer, invoice and currency are fixed",
      tag: 'Payments',
      access: requires('PaymentService:updatePayment'),
      params: idParam,
      body: updatePaymentBody,
      response: paymentSchema,
      handler: async ({ params, body, auth }) => service.update(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/payments/{id}',
      summary: 'Delete a payment; it is kept for history but vanishes from every read',
      tag: 'Payments',
      access: requires('PaymentService:deletePayment'),
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await service.delete(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
  ];
}
