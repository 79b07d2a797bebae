import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { RENDERS_TEMPLATES, documented } from '../../http/openapi';
import { idParam } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { emailQuery, emailSchema, sendEmailBody } from './emails.schemas';

const TAG = 'Emails';
const read = requires('EmailService:getEmails');

export function emailRoutes(deps: AppDeps): Route[] {
  const { emails, emailSending } = deps.services;

  return [
    documented(
      defineRoute({
        method: 'post',
        path: '/emails',
        summary: 'Send an e-mail from a template or from a subject and html given here; it is queued, then sent by the worker',
        tag: TAG,
        access: requires('EmailService:sendEmail'),
        body: sendEmailBody,
        response: emailSchema,
        successStatus: 201,
        handler: async ({ body, auth }) => emailSending.send(auth.organisationId, body, auth.subjectId),
      }),
      RENDERS_TEMPLATES,
    ),
    defineRoute({
      method: 'get',
      path: '/emails',
      summary: 'List e-mails sent through the API, newest first',
      tag: TAG,
      access: read,
      query: emailQuery,
      response: pageOf(emailSchema),
      handler: async ({ query, auth }) => emails.list(auth.organisationId, { status: query.status }, query),
    }),
    defineRoute({
      method: 'get',
      path: '/emails/{id}',
      summary: "Read an e-mail's status: queued, sent or failed, with its attempts and the last error",
      tag: TAG,
      access: read,
      params: idParam,
      response: emailSchema,
      handler: async ({ params, auth }) => emails.get(auth.organisationId, params.id),
    }),
  ];
}
