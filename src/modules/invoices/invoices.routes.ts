import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { RAISES_AND_SENDS_INVOICES, RAISES_INVOICES, RENDERS_TEMPLATES, documented } from '../../http/openapi';
import { pageOf } from '../../http/paging';
import { anyToken, defineRoute, requires, type Route } from '../../http/route';
import { idParam, deleted, reference } from '../../http/schemas';
import { sendPdf } from '../../http/download';
import {
  createInvoiceBody,
  invoiceItemInput,
  invoiceItemSchema,
  invoiceListQuery,
  invoiceSchema,
  markPaidBody,
  updateDraftBody,
  updateInvoiceStatusBody,
} from './invoices.schemas';

export function invoiceRoutes(deps: AppDeps): Route[] {
  const { invoices: service, invoiceItems: items } = deps.services;

  return [
    defineRoute({
      method: 'post',
      path: '/invoices',
      summary: 'Create a draft invoice with its items for a contract plan; starts its lifecycle workflow',
      tag: 'Invoices',
      access: requires('InvoiceService:createInvoice'),
      body: createInvoiceBody,
      response: invoiceSchema,
      successStatus: 201,
      handler: async ({ body, auth }) =>
        service.create(auth.organisationId, {
          contractPlanId: body.contractPlanId,
          date: body.invoiceData.date,
          fromDate: body.invoiceData.fromDate,
          toDate: body.invoiceData.toDate,
          customerReference: body.invoiceData.customerReference,
          purchaseOrderNumber: body.invoiceData.purchaseOrderNumber,
          items: body.invoiceItems,
        }),
    }),
    defineRoute({
      method: 'get',
      path: '/invoices',
      summary: 'List invoices; search matches the number or comments',
      tag: 'Invoices',
      access: requires('InvoiceService:getInvoices'),
      query: invoiceListQuery,
      response: pageOf(invoiceSchema),
      handler: async ({ query, auth }) => service.list(auth.organisationId, query, query),
    }),
    defineRoute({
      method: 'get',
      path: '/invoices/{id}',
      summary: 'Read an invoice with its items',
      tag: 'Invoices',
      access: requires('InvoiceService:getInvoiceById'),
      params: idParam,
      response: invoiceSchema,
      handler: async ({ params, auth }) => service.get(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'patch',
      path: '/invoices/{id}',
      summary: "Set or clear a draft's customerReference and purchaseOrderNumber (409 once raised)",
      tag: 'Invoices',
      access: requires('InvoiceService:createInvoice'),
      params: idParam,
      body: updateDraftBody,
      response: invoiceSchema,
      handler: async ({ params, body, auth }) => service.updateDraft(auth.organisationId, params.id, body),
    }),
    documented(
      defineRoute({
        method: 'put',
        path: '/invoices/{id}',
        summary: 'Set the status to paid (paidDate required; missing steps run first) or cancelled',
        tag: 'Invoices',
        access: anyToken,
        params: idParam,
        body: updateInvoiceStatusBody,
        response: invoiceSchema,
        handler: async ({ params, body, auth }) =>
          service.setStatus(auth.organisationId, params.id, body.status, {
            comments: body.comments,
            paidDate: body.status === 'paid' ? body.paidDate : undefined,
          }),
      }),
      RAISES_AND_SENDS_INVOICES,
    ),
    documented(
      defineRoute({
        method: 'post',
        path: '/invoices/{id}/raise',
        summary: 'Raise: assign the next number, lock the items, fix totals and taxes',
        tag: 'Invoices',
        access: requires('InvoiceService:raiseInvoice'),
        params: idParam,
        response: invoiceSchema,
        handler: async ({ params, auth, req }) => service.transition(auth.organisationId, params.id, 'raise', {}, req.header('Idempotency-Key')),
      }),
      RAISES_INVOICES,
    ),
    documented(
      defineRoute({
        method: 'post',
        path: '/invoices/{id}/send',
        summary: "Send: e-mail the PDF to the customer's contact groups",
        tag: 'Invoices',
        access: requires('InvoiceService:sendInvoice'),
        params: idParam,
        response: invoiceSchema,
        handler: async ({ params, auth, req }) => service.transition(auth.organisationId, params.id, 'send', {}, req.header('Idempotency-Key')),
      }),
      RENDERS_TEMPLATES,
    ),
    documented(
      defineRoute({
        method: 'post',
        path: '/invoices/{id}/mark-paid',
        summary: 'Mark paid: record the payment; missing steps run first',
        tag: 'Invoices',
        access: requires('InvoiceService:markInvoicePaid'),
        params: idParam,
        body: markPaidBody,
        response: invoiceSchema,
        handler: async ({ params, body, auth, req }) =>
          service.transition(auth.organisationId, params.id, 'markPaid', { paidDate: body.paidDate }, req.header('Idempotency-Key')),
      }),
      RAISES_AND_SENDS_INVOICES,
    ),
    defineRoute({
      method: 'get',
      path: '/invoices/{id}/pdf',
      summary: 'The invoice as a PDF document',
      tag: 'Invoices',
      access: requires('InvoiceService:generateInvoicePdf'),
      params: idParam,
      rawResponse: { contentType: 'application/pdf' },
      handler: async ({ params, auth, res }) => sendPdf(res, await service.pdf(auth.organisationId, params.id)),
    }),
    defineRoute({
      method: 'post',
      path: '/invoices/{id}/sync-items',
      summary: "Recompute a draft's plan items from its contract plan and metered usage for its period (409 once raised)",
      tag: 'Invoice items',
      access: requires('InvoiceService:syncInvoiceItems'),
      params: idParam,
      response: invoiceSchema,
      handler: async ({ params, auth }) => items.syncFromPlan(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'get',
      path: '/invoices/{id}/items',
      summary: "An invoice's items",
      tag: 'Invoice items',
      access: requires('InvoiceItemService:getInvoiceItems'),
      params: idParam,
      response: z.array(invoiceItemSchema),
      handler: async ({ params, auth }) => items.list(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'post',
      path: '/invoices/{id}/items',
      summary: 'Add an item to a draft invoice (409 once raised)',
      tag: 'Invoice items',
      access: requires('InvoiceItemService:createInvoiceItem'),
      params: idParam,
      body: invoiceItemInput,
      response: invoiceItemSchema,
      successStatus: 201,
      handler: async ({ params, body, auth }) => items.add(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/invoices/{id}/items/{itemId}',
      summary: 'Delete an item of a draft invoice (409 once raised)',
      tag: 'Invoice items',
      access: requires('InvoiceItemService:deleteInvoiceItem'),
      params: z.object({ id: reference(), itemId: reference() }),
      response: z.object({ id: z.string(), deleted: z.literal(true) }),
      handler: async ({ params, auth }) => {
        await items.delete(auth.organisationId, params.id, params.itemId);
        return deleted(params.itemId);
      },
    }),
  ];
}
