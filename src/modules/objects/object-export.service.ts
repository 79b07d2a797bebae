import fs from 'node:fs/promises';
import path from 'node:path';
import type { Knex } from 'knex';
import { AppError } from '../../domain/errors';
import { exportFile } from '../jobs/export-files';
import { createJobRepository } from '../jobs/jobs.repository';
import { OBJECTS, toObjectRecord } from './object-registry';
import type { ExportInput, ExportProgress } from '../../../workflows/export.types';
import { createObjectRepository } from './objects.repository';

const PAGE_ROWS = 5000;


/** RFC 4180 quoting, and a leading quote on cells a spreadsheet would run as a formula. */
export function csvCell(value: unknown): string {
  let text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function createObjectExportService(deps: { db: Knex; dataDir: string }) {
  const objects = createObjectRepository(deps.db);
  const jobs = createJobRepository(deps.db);

  return {
    /**
     * Writes the CSV page by page in id order (keyset pagination), reporting progress on the job and to
     * `onProgress` after every page. Given the progress of an earlier attempt, it resumes after that
     * page, truncating anything written past it, so the file holds every row exactly once.
     */
    async exportObjects(input: ExportInput, progress: { resumeFrom?: ExportProgress; onProgress: (details: ExportProgress) => void }): Promise<{ rows: number; bytes: number }> {
      const descriptor = OBJECTS[input.object];
      if (!descriptor) throw new AppError('validation', `unknown object ${input.object}`);
      const file = exportFile(deps.dataDir, input.organisationId, input.jobId);
      await fs.mkdir(path.dirname(file), { recursive: true });
      const columns = Object.keys(descriptor.fields);
      const idColumn = descriptor.fields.id!.column;
      const resumed = progress.resumeFrom;
      let { lastId, rows, bytes } = resumed ?? { lastId: '', rows: 0, bytes: 0 };
      if (resumed) {
        await fs.truncate(file, bytes);
      } else {
        const header = `${columns.map(csvCell).join(',')}\r\n`;
        await fs.writeFile(file, header);
        bytes = Buffer.byteLength(header);
      }
      const total = await objects.count(descriptor, input.organisationId, input.query);
      await jobs.update(input.organisationId, input.jobId, { status: 'running', total, done: rows });
      for (;;) {
        const page = await objects.after(descriptor, input.organisationId, input.query, lastId, PAGE_ROWS);
        if (page.length === 0) break;
        const chunk = page.map((row) => `${columns.map((column) => csvCell(toObjectRecord(descriptor, row)[column])).join(',')}\r\n`).join('');
        await fs.appendFile(file, chunk);
        bytes += Buffer.byteLength(chunk);
        rows += page.length;
        lastId = String(page[page.length - 1]![idColumn]);
        progress.onProgress({ lastId, rows, bytes });
        await jobs.update(input.organisationId, input.jobId, { done: rows });
      }
      return { rows, bytes };
    },
  };
}

export type ObjectExportService = ReturnType<typeof createObjectExportService>;
