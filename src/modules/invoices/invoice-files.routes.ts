import { createHash } from 'node:crypto';
import path from 'node:path';
import type { RequestHandler } from 'express';
import multer from 'multer';
import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { newId } from '../../db/ids';
import { AppError, ERROR_CODES } from '../../domain/errors';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted } from '../../http/schemas';
import { createFilesystemStorage } from '../../storage/file-storage';

interface FileRow {
  id: string;
  invoice_id: string;
  filename: string;
  content_type: string;
  size: string;
  sha256: string;
  storage_key: string;
  uploaded_by: string | null;
  created_at: Date;
}

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

const toFile = (row: FileRow) => ({
  id: row.id,
  invoiceId: row.invoice_id,
  filename: row.filename,
  contentType: row.content_type,
  size: Number(row.size),
  sha256: row.sha256,
  uploadedBy: row.uploaded_by,
  createdAt: row.created_at.toISOString(),
});

const fileParams = z.object({ invoiceId: z.string().min(1).max(64), fileId: z.string().min(1).max(64) });

/** Multipart parsing with a size limit; errors come back in the envelope (413 for a file too large). */
function singleFile(limitBytes: number): RequestHandler {
  const upload = multer({ storage: multer.memoryStorage(), limits: { fileSize: limitBytes, files: 1 } }).single('file');
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
  const storage = createFilesystemStorage(path.resolve(deps.config.DATA_DIR, 'invoice-files'));
  const { db } = deps;

  async function requireInvoice(organisationId: string, invoiceId: string): Promise<void> {
    const invoice = await db('invoices').where({ organisation_id: organisationId, id: invoiceId }).whereNull('deleted_at').first('id');
    if (!invoice) throw AppError.notFound('Invoice');
  }

  async function requireFile(organisationId: string, invoiceId: string, fileId: string): Promise<FileRow> {
    const row = await db('invoice_files').where({ organisation_id: organisationId, invoice_id: invoiceId, id: fileId }).first<FileRow | undefined>();
    if (!row) throw AppError.notFound('Invoice file');
    return row;
  }

  return [
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
      handler: async ({ params, auth, req }) => {
        await requireInvoice(auth.organisationId, params.id);
        const file = req.file;
        if (!file) throw AppError.validation('a multipart field "file" is required', 'body.file');
        const id = newId('fil');
        const key = path.join(auth.organisationId, params.id, id);
        await storage.put(key, file.buffer);
        const [row] = await db('invoice_files')
          .insert({
            id,
            organisation_id: auth.organisationId,
            invoice_id: params.id,
            filename: path.basename(file.originalname).slice(0, 255) || 'file',
            content_type: file.mimetype || 'application/octet-stream',
            size: file.size,
            sha256: createHash('sha256').update(file.buffer).digest('hex'),
            storage_key: key,
            uploaded_by: auth.subjectId,
          })
          .returning<FileRow[]>('*');
        return toFile(row!);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/invoices/{id}/files',
      summary: "An invoice's uploaded documents",
      tag: 'Invoice files',
      access: requires('InvoiceService:getInvoiceFiles'),
      params: idParam,
      response: z.array(fileSchema),
      handler: async ({ params, auth }) => {
        await requireInvoice(auth.organisationId, params.id);
        const rows: FileRow[] = await db('invoice_files').where({ organisation_id: auth.organisationId, invoice_id: params.id }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
        return rows.map(toFile);
      },
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
        const row = await requireFile(auth.organisationId, params.invoiceId, params.fileId);
        res.status(200).type(row.content_type).setHeader('Content-Disposition', `attachment; filename="${row.filename.replace(/["\\\r\n]/g, '_')}"`);
        res.setHeader('Content-Length', row.size);
        await new Promise<void>((resolve, reject) => {
          storage.read(row.storage_key).on('error', reject).pipe(res).on('finish', resolve);
        });
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
        const row = await requireFile(auth.organisationId, params.invoiceId, params.fileId);
        await db('invoice_files').where({ id: row.id }).delete();
        await storage.remove(row.storage_key);
        return deleted(row.id);
      },
    }),
  ];
}
