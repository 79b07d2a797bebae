import type { Knex } from 'knex';
import { createJobRepository } from './jobs.repository';

export { exportKey } from './export-files';
export { createJobControlService } from './job-control.service';
export { toJob } from './jobs.repository';
export { jobSchema } from './jobs.schemas';
export type { Job } from './jobs.schemas';
export { createJobService } from './jobs.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type JobAccess = Pick<ReturnType<typeof createJobRepository>, 'create' | 'delete' | 'update'>;
export const jobsIn = (db: Knex): JobAccess => createJobRepository(db);
