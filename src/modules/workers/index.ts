import type { Knex } from 'knex';
import { createWorkerHeartbeatRepository } from './workers.repository';

export { HEARTBEAT_FRESH_SECONDS, startWorkerHeartbeat } from './worker-heartbeat.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type HeartbeatAccess = Pick<ReturnType<typeof createWorkerHeartbeatRepository>, 'hasBeatWithin' | 'summary'>;
export const heartbeatsIn = (db: Knex): HeartbeatAccess => createWorkerHeartbeatRepository(db);
