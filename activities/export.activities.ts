import fs from 'node:fs/promises';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import type { Knex } from 'knex';
import { exportFile } from '../src/modules/jobs/export-files';
import { createJobRepository } from '../src/modules/jobs/jobs.repository';
import { OBJECTS, toObjectRecord } from '../src/modules/objects/object-registry';
import { objectQuery, type ObjectQuery } from '../src/modules/objects/object-sql';
import { AppError } from '../src/domain/errors';

const PAGE_ROWS = 5000;

export interface ExportInput {
  jobId: string;
  organisationId: string;
  object: string;
  query: ObjectQuery;
}

/** RFC 4180 quoting, and a leading quote on cells a spreadsheet would run as a formula. */
export function csvCell(value: unknown): string {
  let text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function createExportActivities(deps: { db: Knex; dataDir: string }) {
  const { db } = deps;
  const jobs = createJobRepository(db);
  return {
    /**
     * Writes the CSV page by page in id order (keyset pagination), reporting progress on the job after
     * every page. A retry resumes after the last page its heartbeat recorded, truncating anything written
     * past it, so the file holds every row exactly once.
     */
    async exportObjects(input: ExportInput): Promise<{ rows: number; bytes: number }> {
      const descriptor = OBJECTS[input.object];
      if (!descriptor) throw new AppError('validation', `unknown object ${input.object}`);
      const context = Context.current();
      const file = exportFile(deps.dataDir, input.organisationId, input.jobId);
      await fs.mkdir(path.dirname(file), { recursive: true });
      const columns = Object.keys(descriptor.fields);
      const idColumn = descriptor.fields.id!.column;
      const resumed = context.info.heartbeatDetails as { lastId: string; rows: number; bytes: number } | undefined;
      let { lastId, rows, bytes } = resumed ?? { lastId: '', rows: 0, bytes: 0 };
      if (resumed) {
        await fs.truncate(file, bytes);
      } else {
        const header = `${columns.map(csvCell).join(',')}\r\n`;
        await fs.writeFile(file, header);
        bytes = Buffer.byteLength(header);
      }
      const total = Number((await objectQuery(db, descriptor, input.organisationId, input.query).base.clone().count<{ n: string }[]>({ n: '*' }))[0]?.n ?? 0);
      await jobs.update(input.organisationId, input.jobId, { status: 'running', total, done: rows });
      for (;;) {
        const { base } = objectQuery(db, descriptor, input.organisationId, input.query);
        const page: Record<string, unknown>[] = await base.where(idColumn, '>', lastId).orderBy(idColumn).limit(PAGE_ROWS).select('*');
        if (page.length === 0) break;
        const chunk = page.map((row) => `${columns.map((column) => csvCell(toObjectRecord(descriptor, row)[column])).join(',')}\r\n`).join('');
        await fs.appendFile(file, chunk);
        bytes += Buffer.byteLength(chunk);
        rows += page.length;
        lastId = String(page[page.length - 1]![idColumn]);
        context.heartbeat({ lastId, rows, bytes });
        await jobs.update(input.organisationId, input.jobId, { done: rows });
      }
      return { rows, bytes };
    },

    async finishJob(input: { organisationId: string; jobId: string; result?: unknown; error?: string }): Promise<void> {
      await jobs.update(input.organisationId, input.jobId, input.error ? { status: 'failed', error: input.error } : { status: 'completed', result: input.result });
    },
  };
}

export type ExportActivities = ReturnType<typeof createExportActivities>;
