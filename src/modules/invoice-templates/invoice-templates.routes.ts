import type { AppDeps } from '../../deps';
import { sendAsAttachment } from '../../http/download';
import { documented } from '../../http/openapi';
import { singleFile, singleFileRequestBody } from '../../http/upload';
import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam } from '../../http/schemas';
import { createTemplateBody, LOGO_MAX_BYTES, templateSchema, updateTemplateBody } from './invoice-templates.schemas';

const TAG = 'Invoice templates';
/** SystemUser reads templates; how the organisation's invoices look is an Admin's decision. */
const read = requires('InvoiceTemplateService:getTemplates');
const manage = requires('InvoiceTemplateService:manageTemplates');

export function invoiceTemplateRoutes(deps: AppDeps): Route[] {
  const { invoiceTemplates } = deps.services;

  return [
    defineRoute({
      method: 'post',
      path: '/invoice-templates',
      summary: "Add an invoice template (Admin only); isDefault makes it the one the organisation's invoice PDFs use",
      tag: TAG,
      access: manage,
      body: createTemplateBody,
      response: templateSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => invoiceTemplates.create(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/invoice-templates',
      summary: 'List invoice templates',
      tag: TAG,
      access: read,
      query: pageQuery,
      response: pageOf(templateSchema),
      handler: async ({ query, auth }) => invoiceTemplates.list(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/invoice-templates/{id}',
      summary: 'Read an invoice template',
      tag: TAG,
      access: read,
      params: idParam,
      response: templateSchema,
      handler: async ({ params, auth }) => invoiceTemplates.get(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/invoice-templates/{id}',
      summary: 'Change an invoice template: name, accentColor, footerText, legalText, isDefault (Admin only)',
      tag: TAG,
      access: manage,
      params: idParam,
      body: updateTemplateBody,
      response: templateSchema,
      handler: async ({ params, body, auth }) => invoiceTemplates.update(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/invoice-templates/{id}',
      summary: 'Delete an invoice template and its logo; without a default, invoice PDFs have the plain layout (Admin only)',
      tag: TAG,
      access: manage,
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => invoiceTemplates.delete(auth.organisationId, params.id),
    }),
    documented(
      defineRoute({
        method: 'put',
        path: '/invoice-templates/{id}/logo',
        summary: `Upload the template's logo (multipart/form-data, field "file"): a PNG or JPEG of at most ${LOGO_MAX_BYTES / 1024} KB (Admin only)`,
        tag: TAG,
        access: manage,
        before: [singleFile(LOGO_MAX_BYTES)],
        params: idParam,
        response: templateSchema,
        handler: async ({ params, auth, req }) => invoiceTemplates.setLogo(auth.organisationId, params.id, req.file),
      }),
      {
        requestBody: singleFileRequestBody,
      },
    ),
    defineRoute({
      method: 'get',
      path: '/invoice-templates/{id}/logo',
      summary: "Download the template's logo",
      tag: TAG,
      access: read,
      params: idParam,
      rawResponse: { contentType: 'image/png' },
      handler: async ({ params, auth, res }) => {
        const logo = await invoiceTemplates.logo(auth.organisationId, params.id);
        sendAsAttachment(res, logo.contentType, 'logo.png').setHeader('Content-Length', logo.size);
        res.end(logo.content);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/invoice-templates/{id}/logo',
      summary: "Remove the template's logo, if it has one (Admin only)",
      tag: TAG,
      access: manage,
      params: idParam,
      response: templateSchema,
      handler: async ({ params, auth }) => invoiceTemplates.removeLogo(auth.organisationId, params.id),
    }),
  ];
}
