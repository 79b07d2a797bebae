import type { Knex } from 'knex';
import { AppError } from '../../domain/errors';
import type { FileStorage, PartUpload, UploadCheckpoint } from '../../storage/file-storage';
import { exportKey, jobsIn } from '../jobs';
import { objectNamed, toObjectRecord } from './object-registry';
import type { ExportInput, ExportProgress } from '../../../workflows/export.types';
import { createObjectRepository } from './objects.repository';

const PAGE_ROWS = 5000;

/**
 * How far an export got, as its heartbeat records it: the last row held by the parts already stored, and
 * the upload holding them. A retry on any worker resumes from it.
 */
export type ExportCheckpoint = ExportProgress & { upload?: UploadCheckpoint };

/**
 * RFC 4180 quoting, and a leading quote on cells a spreadsheet would run as a formula. A plain number (a
 * refund's `-30.00`) is no formula and stays a number, so that a column of amounts adds up.
 */
export function csvCell(value: unknown): string {
  let text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (/^[=+\-@\t\r]/.test(text) && !/^-\d+(\.\d+)?$/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function createObjectExportService(deps: { db: Knex; exports: FileStorage }) {
  const objects = createObjectRepository(deps.db);
  const jobs = jobsIn(deps.db);

  /** The upload an earlier attempt recorded, if its parts are still there; otherwise a fresh one, header first. */
  async function openUpload(key: string, header: string, resumeFrom: ExportCheckpoint | undefined): Promise<{ upload: PartUpload; at: ExportCheckpoint; pending: string }> {
    const resumed = resumeFrom?.upload && (await deps.exports.resumeUpload(key, resumeFrom.upload));
    if (resumed) return { upload: resumed, at: resumeFrom, pending: '' };
    const upload = await deps.exports.startUpload(key, 'text/csv');
    return { upload, at: { lastId: '', rows: 0, bytes: 0 }, pending: header };
  }

  return {
    /**
     * Writes the CSV page by page in id order (keyset pagination) into an upload to the exports storage,
     * reporting progress on the job after every page. Pages are stored in parts of the storage's minimum
     * size; after each part `onProgress` gets the checkpoint, and an attempt given an earlier one resumes
     * after its last row, so the file holds every row exactly once whichever worker finishes it.
     */
    async exportObjects(input: ExportInput, progress: { resumeFrom?: ExportCheckpoint; onProgress: (details: ExportCheckpoint) => void }): Promise<{ rows: number; bytes: number }> {
      const descriptor = objectNamed(input.object);
      if (!descriptor) throw new AppError('validation', `unknown object ${input.object}`);
      const columns = Object.keys(descriptor.fields);
      const idColumn = descriptor.fields.id!.column;
      const header = `${columns.map(csvCell).join(',')}\r\n`;
      const opened = await openUpload(exportKey(input.organisationId, input.jobId), header, progress.resumeFrom);
      const { upload } = opened;
      let checkpoint = opened.at;
      let pending = opened.pending;
      let { lastId, rows } = checkpoint;

      const store = async () => {
        await upload.appendPart(Buffer.from(pending));
        pending = '';
        const stored = upload.checkpoint();
        checkpoint = { lastId, rows, bytes: stored.bytes, upload: stored };
      };

      const total = await objects.count(descriptor, input.organisationId, input.query);
      await jobs.update(input.organisationId, input.jobId, { status: 'running', total, done: rows });
      for (;;) {
        const page = await objects.after(descriptor, input.organisationId, input.query, lastId, PAGE_ROWS);
        if (page.length === 0) break;
        pending += page.map((row) => `${columns.map((column) => csvCell(toObjectRecord(descriptor, row)[column])).join(',')}\r\n`).join('');
        rows += page.length;
        lastId = String(page[page.length - 1]![idColumn]);
        if (Buffer.byteLength(pending) >= upload.minPartBytes) await store();
        // Every page heartbeats, with the last stored checkpoint: rows still pending are read again by a retry.
        progress.onProgress(checkpoint);
        // The job was deleted (DELETE /jobs/{id} cancels the workflow): its file would belong to nobody.
        if (!(await jobs.update(input.organisationId, input.jobId, { done: rows }))) {
          await upload.abort();
          return { rows, bytes: checkpoint.bytes };
        }
      }
      if (pending) await store();
      await upload.complete();
      return { rows, bytes: checkpoint.bytes };
    },
  };
}

export type ObjectExportService = ReturnType<typeof createObjectExportService>;
