import type { Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { createActivities } from '../../activities';
import type { Config } from '../config';
import { createMailer } from '../mail/mailer';
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
  const worker = await Worker.create({
    connection,
    namespace: deps.config.TEMPORAL_NAMESPACE,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    workflowsPath: WORKFLOWS_PATH,
    activities: createActivities({
      db: deps.db,
      logger: deps.logger,
      dataDir: deps.config.DATA_DIR,
      mailer: createMailer({ smtpUrl: deps.config.SMTP_URL, from: deps.config.MAIL_FROM, dataDir: deps.config.DATA_DIR }),
    }),
    maxConcurrentActivityTaskExecutions: deps.config.WORKER_MAX_CONCURRENT_ACTIVITIES,
    // Let running activities finish on shutdown; what does not finish in time is retried elsewhere.
    shutdownGraceTime: '30s',
    ...overrides,
  });
  return { worker, connection };
}
