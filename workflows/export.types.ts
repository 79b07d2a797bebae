/** The contract of `exportWorkflow`: its input, its result and its activities. */

import type { ObjectQuery } from '../src/domain/object-query';

/** POST /objects/export: which object, filtered and sorted how, into which job. */
export interface ExportInput {
  jobId: string;
  organisationId: string;
  object: string;
  query: ObjectQuery;
}

/** How far an export got: enough to resume it after the last page written. */
export interface ExportProgress {
  lastId: string;
  rows: number;
  bytes: number;
}

/** What an export wrote. */
export interface ExportResult {
  rows: number;
  bytes: number;
}

export interface ExportActivities {
  /** The CSV written page by page; its heartbeat carries the progress, so a retry resumes after the last page. */
  exportObjects(input: ExportInput): Promise<ExportResult>;
  /** The job's end: its result, or the error that ended it. */
  finishJob(input: { organisationId: string; jobId: string; result?: unknown; error?: string }): Promise<void>;
}
