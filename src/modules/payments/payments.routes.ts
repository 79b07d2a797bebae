import { pageOf } from '../../http/paging';
import { documented } from '../../http/openapi';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { createPaymentBody, paymentListQuery, paymentSchema, updatePaymentBody } from './payments.schemas';

export function paymentRoutes(deps: AppDeps): Route[] {
  const service = deps.services.payments;

  return [
    documented(
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
        ownIdempotency: true,
        handler: async ({ body, auth, req, res, setSuccessStatus }) => {
          const created = await service.create(auth.organisationId, body, req.header('Idempotency-Key'));
          // A replay creates nothing: 200, and said so in Idempotent-Replayed (as Stripe does).
          if (created.replayed) {
            res.setHeader('Idempotent-Replayed', 'true');
            setSuccessStatus(200);
          }
          return created.payment;
        },
      }),
      { alsoSucceedsWith: { status: 200, description: 'A replay of an earlier request with the same Idempotency-Key: the payment it created' } },
    ),
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
