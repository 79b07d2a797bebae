import type { RequestHandler } from 'express';
import multer from 'multer';
import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { AppError, ERROR_CODES } from '../../domain/errors';
import { documented } from '../../http/openapi';
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

/** Multipart parsing with a size limit; errors come back in the envelope (413 for a file too large). */
function singleFile(limitBytes: number): RequestHandler {
  // Clients send a file name's UTF-8 bytes as they are; multer would read them as Latin-1.
  const upload = multer({ storage: multer.memoryStorage(), limits: { fileSize: limitBytes, files: 1 }, defParamCharset: 'utf8' }).single('file');
  return (req, res, next) =>
    upload(req, res, (error: unknown) => {
      if (!error) return next();
      if (error instanceof multer.MulterError && error.code === 'LIMIT_FILE_SIZE') {
        return next(new AppError('payload_too_large', 'File too large', [{ code: ERROR_CODES.payload_too_large, path: 'body.file', message: `at most ${limitBytes} bytes` }]));
      }
      const message = error instanceof Error ? error.message : 'Malformed multipart body';
      return next(AppError.validation(message, 'body.file'));
    });
}

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
        requestBody: {
          required: true,
          content: { 'multipart/form-data': { schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } }, additionalProperties: false } } },
        },
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
