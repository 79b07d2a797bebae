import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { idParam } from '../../http/schemas';
import { sendPdf } from '../../http/download';
import type { AppDeps } from '../../deps';
import { createCreditNoteBody, creditNoteListQuery, creditNoteSchema } from './credit-notes.schemas';

const TAG = 'Credit notes';
const read = requires('CreditNoteService:getCreditNotes');

export function creditNoteRoutes(deps: AppDeps): Route[] {
  const { creditNotes } = deps.services;
  return [
    defineRoute({
      method: 'post',
      path: '/invoices/{id}/credit-notes',
      summary: 'Credit part or all of a raised, sent or paid invoice (never beyond its total, 409): the credit note is numbered and issued at once',
      tag: TAG,
      access: requires('CreditNoteService:createCreditNote'),
      params: idParam,
      body: createCreditNoteBody,
      response: creditNoteSchema,
      successStatus: 201,
      handler: async ({ params, body, auth, req }) => creditNotes.create(auth.organisationId, params.id, body, req.header('Idempotency-Key')),
    }),
    defineRoute({
      method: 'get',
      path: '/credit-notes',
      summary: 'List credit notes, newest first, by customer, invoice or status',
      tag: TAG,
      access: read,
      query: creditNoteListQuery,
      response: pageOf(creditNoteSchema),
      handler: async ({ query, auth }) => creditNotes.list(auth.organisationId, { customerId: query.customerId, invoiceId: query.invoiceId, status: query.status }, query),
    }),
    defineRoute({
      method: 'get',
      path: '/credit-notes/{id}',
      summary: 'Read a credit note with its lines',
      tag: TAG,
      access: read,
      params: idParam,
      response: creditNoteSchema,
      handler: async ({ params, auth }) => creditNotes.get(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'get',
      path: '/credit-notes/{id}/pdf',
      summary: 'The credit note as a PDF document, laid out as its invoice in the organisation’s default template',
      tag: TAG,
      access: read,
      params: idParam,
      rawResponse: { contentType: 'application/pdf' },
      handler: async ({ params, auth, res }) => sendPdf(res, await creditNotes.pdf(auth.organisationId, params.id)),
    }),
    defineRoute({
      method: 'post',
      path: '/credit-notes/{id}/issue',
      summary: 'Issue a draft credit note (one whose issue was undone): it keeps the number it had',
      tag: TAG,
      access: requires('CreditNoteService:createCreditNote'),
      params: idParam,
      response: creditNoteSchema,
      handler: async ({ params, auth }) => creditNotes.issue(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'post',
      path: '/credit-notes/{id}/void',
      summary: 'Void a credit note: a refund it made is withdrawn, credit it added to the balance is taken back (409 if spent)',
      tag: TAG,
      access: requires('CreditNoteService:voidCreditNote'),
      params: idParam,
      response: creditNoteSchema,
      handler: async ({ params, auth }) => creditNotes.void(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'post',
      path: '/credit-notes/{id}/undo',
      summary: 'Undo the last step of a credit note: a void (the note counts again) or an issue (the note is a draft again)',
      tag: TAG,
      access: requires('CreditNoteService:undoCreditNote'),
      params: idParam,
      response: creditNoteSchema,
      handler: async ({ params, auth }) => creditNotes.undo(auth.organisationId, params.id),
    }),
  ];
}
