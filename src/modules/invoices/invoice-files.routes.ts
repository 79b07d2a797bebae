import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { documented } from '../../http/openapi';
import { singleFile, singleFileRequestBody } from '../../http/upload';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted, reference } from '../../http/schemas';
import { streamAttachment } from '../../http/download';

const fileSchema = z.object({
  id: z.string(),
  invoiceId: z.string(),
  filename: z.string(),
  contentType: z.string(),
  size: z.number().int(),
  sha256: z.string(),
  uploadedBy: z.string().nullable(),
  createdAt: z.string(),
});

const fileParams = z.object({ invoiceId: reference(), fileId: reference() });

export function invoiceFileRoutes(deps: AppDeps): Route[] {
  const files = deps.services.invoiceFiles;

  return [
    documented(
      defineRoute({
        method: 'post',
        path: '/invoices/{id}/files',
        summary: 'Upload a document to an invoice (multipart/form-data, field "file")',
        tag: 'Invoice files',
        access: requires('InvoiceService:uploadInvoiceDocument'),
        before: [singleFile(deps.config.UPLOAD_LIMIT_BYTES)],
        params: idParam,
        response: fileSchema,
        successStatus: 201,
        handler: async ({ params, auth, req }) => files.upload(auth.organisationId, params.id, req.file, auth.subjectId),
      }),
      {
        requestBody: singleFileRequestBody,
      },
    ),
    defineRoute({
      method: 'get',
      path: '/invoices/{id}/files',
      summary: "An invoice's uploaded documents",
      tag: 'Invoice files',
      access: requires('InvoiceService:getInvoiceFiles'),
      params: idParam,
      response: z.array(fileSchema),
      handler: async ({ params, auth }) => files.list(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'get',
      path: '/invoices/{invoiceId}/files/{fileId}',
      summary: 'Download an uploaded document',
      tag: 'Invoice files',
      access: requires('InvoiceService:getInvoiceFiles'),
      params: fileParams,
      rawResponse: { contentType: 'application/octet-stream' },
      handler: async ({ params, auth, res }) => {
        const file = await files.download(auth.organisationId, params.invoiceId, params.fileId);
        await streamAttachment(res, file, file.contentType, file.filename);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/invoices/{invoiceId}/files/{fileId}',
      summary: 'Remove an uploaded document from an invoice (Admin only)',
      tag: 'Invoice files',
      access: requires('InvoiceService:deleteInvoiceFile'),
      params: fileParams,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await files.remove(auth.organisationId, params.invoiceId, params.fileId);
        return deleted(params.fileId);
      },
    }),
  ];
}
