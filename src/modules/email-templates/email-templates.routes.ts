import { z } from 'zod';
import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { RENDERS_TEMPLATES, documented } from '../../http/openapi';
import { deletedSchema, idParam } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { createTemplateBody, EMAIL_TEMPLATE_KINDS, templateSchema, updateTemplateBody } from './email-templates.schemas';

const TAG = 'Email templates';
/** SystemUser reads templates (to send with one); what the organisation's mail says is an Admin's decision. */
const read = requires('EmailTemplateService:getTemplates');
const manage = requires('EmailTemplateService:manageTemplates');

export function emailTemplateRoutes(deps: AppDeps): Route[] {
  const { emailTemplates } = deps.services;

  return [
    documented(
      defineRoute({
        method: 'post',
        path: '/email-templates',
        summary: 'Add an e-mail template (Admin only); an invoice or reminder template replaces the built-in message',
        tag: TAG,
        access: manage,
        body: createTemplateBody,
        response: templateSchema,
        successStatus: 201,
        handler: async ({ body, auth }) => emailTemplates.create(auth.organisationId, body),
      }),
      RENDERS_TEMPLATES,
    ),
    defineRoute({
      method: 'get',
      path: '/email-templates',
      summary: 'List e-mail templates',
      tag: TAG,
      access: read,
      query: pageQuery.extend({ kind: z.enum(EMAIL_TEMPLATE_KINDS).optional() }),
      response: pageOf(templateSchema),
      handler: async ({ query, auth }) => emailTemplates.list(auth.organisationId, { kind: query.kind }, query),
    }),
    defineRoute({
      method: 'get',
      path: '/email-templates/{id}',
      summary: 'Read an e-mail template',
      tag: TAG,
      access: read,
      params: idParam,
      response: templateSchema,
      handler: async ({ params, auth }) => emailTemplates.get(auth.organisationId, params.id),
    }),
    documented(
      defineRoute({
        method: 'put',
        path: '/email-templates/{id}',
        summary: 'Change an e-mail template: name, subject, html, text (Admin only)',
        tag: TAG,
        access: manage,
        params: idParam,
        body: updateTemplateBody,
        response: templateSchema,
        handler: async ({ params, body, auth }) => emailTemplates.update(auth.organisationId, params.id, body),
      }),
      RENDERS_TEMPLATES,
    ),
    defineRoute({
      method: 'delete',
      path: '/email-templates/{id}',
      summary: 'Delete an e-mail template; messages sent with it keep their text (Admin only)',
      tag: TAG,
      access: manage,
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => emailTemplates.delete(auth.organisationId, params.id),
    }),
  ];
}
