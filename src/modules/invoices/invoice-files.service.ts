import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { AppError, orNotFound } from '../../domain/errors';
import type { FileStorage } from '../../storage/file-storage';
import { createInvoiceFileRepository, type InvoiceFileRow } from './invoice-files.repository';
import { createInvoiceRepository } from './invoices.repository';

export function toInvoiceFile(row: InvoiceFileRow) {
  return {
    id: row.id,
    invoiceId: row.invoice_id,
    filename: row.filename,
    contentType: row.content_type,
    size: Number(row.size),
    sha256: row.sha256,
    uploadedBy: row.uploaded_by,
    createdAt: row.created_at.toISOString(),
  };
}

export type InvoiceFile = ReturnType<typeof toInvoiceFile>;

/** What an upload carries, as the multipart parser hands it over. */
export interface UploadedFile {
  originalname: string;
  mimetype: string;
  size: number;
  buffer: Buffer;
}

/** A stored document with the stream of its content. */
export interface InvoiceFileDownload {
  filename: string;
  contentType: string;
  size: number;
  content: Readable;
}

/** Documents uploaded to an invoice: the row in Postgres, the bytes in file storage. */
export function createInvoiceFileService(deps: { db: Knex; storage: FileStorage }) {
  const { storage } = deps;
  const files = createInvoiceFileRepository(deps.db);
  const invoices = createInvoiceRepository(deps.db);

  const requireInvoice = async (organisationId: string, invoiceId: string) => orNotFound(await invoices.findRow(organisationId, invoiceId), 'Invoice');
  const requireFile = async (organisationId: string, invoiceId: string, fileId: string) => orNotFound(await files.find(organisationId, invoiceId, fileId), 'Invoice file');

  return {
    /** The bytes are stored first, so a row never names content that is not there. */
    async upload(organisationId: string, invoiceId: string, file: UploadedFile | undefined, uploadedBy: string): Promise<InvoiceFile> {
      await requireInvoice(organisationId, invoiceId);
      if (!file) throw AppError.validation('a multipart field "file" is required', 'body.file');
      const id = newId('fil');
      const key = path.join(organisationId, invoiceId, id);
      await storage.put(key, file.buffer);
      const row = await files.insert({
        id,
        organisation_id: organisationId,
        invoice_id: invoiceId,
        filename: path.basename(file.originalname).slice(0, 255) || 'file',
        content_type: file.mimetype || 'application/octet-stream',
        size: file.size,
        sha256: createHash('sha256').update(file.buffer).digest('hex'),
        storage_key: key,
        uploaded_by: uploadedBy,
      });
      return toInvoiceFile(row);
    },

    async list(organisationId: string, invoiceId: string): Promise<InvoiceFile[]> {
      await requireInvoice(organisationId, invoiceId);
      return (await files.list(organisationId, invoiceId)).map(toInvoiceFile);
    },

    async download(organisationId: string, invoiceId: string, fileId: string): Promise<InvoiceFileDownload> {
      const row = await requireFile(organisationId, invoiceId, fileId);
      return { filename: row.filename, contentType: row.content_type, size: Number(row.size), content: storage.read(row.storage_key) };
    },

    async remove(organisationId: string, invoiceId: string, fileId: string): Promise<void> {
      const row = await requireFile(organisationId, invoiceId, fileId);
      await files.delete(row.id);
      await storage.remove(row.storage_key);
    },
  };
}

export type InvoiceFileService = ReturnType<typeof createInvoiceFileService>;
