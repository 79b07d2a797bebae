import type { Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { createActivities } from '../../activities';
import type { Config } from '../config';
import { createServices, serviceDepsFrom } from '../services';
import { connectionOptions } from './client';
import { ensureSearchAttributes } from './search-attributes';

export const WORKFLOWS_PATH = require.resolve('../../workflows');

export interface WorkerDeps {
  config: Config;
  temporalAddress: string;
  db: Knex;
  logger: Logger;
}

/** The worker factory: activities come from createActivities(deps), workflows from workflows/index.ts. */
export async function createWorker(deps: WorkerDeps, overrides: Partial<WorkerOptions> = {}): Promise<{ worker: Worker; connection: NativeConnection }> {
  const { tls } = connectionOptions(deps.config, deps.temporalAddress);
  const connection = await NativeConnection.connect({ address: deps.temporalAddress, tls, apiKey: deps.config.TEMPORAL_API_KEY });
  await ensureSearchAttributes(connection as unknown as Pick<Connection, 'operatorService'>, deps.config.TEMPORAL_NAMESPACE);
  const serviceDeps = serviceDepsFrom(deps.config, deps.db);
  const worker = await Worker.create({
    connection,
    namespace: deps.config.TEMPORAL_NAMESPACE,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    workflowsPath: WORKFLOWS_PATH,
    activities: createActivities(createServices(serviceDeps), serviceDeps),
    maxConcurrentActivityTaskExecutions: deps.config.WORKER_MAX_CONCURRENT_ACTIVITIES,
    // Let running activities finish on shutdown; what does not finish in time is retried elsewhere.
    shutdownGraceTime: '30s',
    ...overrides,
  });
  return { worker, connection };
}
