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
