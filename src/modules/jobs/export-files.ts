import path from 'node:path';

/** Where an export's CSV lives: under the data directory, by organisation and job. */
export function exportFile(dataDir: string, organisationId: string, jobId: string): string {
  return path.resolve(dataDir, 'exports', organisationId, `${jobId}.csv`);
}
