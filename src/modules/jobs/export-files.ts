/** The storage key of an export's CSV (in the exports area): by organisation and job, never from a caller's text. */
export function exportKey(organisationId: string, jobId: string): string {
  return `${organisationId}/${jobId}.csv`;
}
