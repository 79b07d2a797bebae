import type { Server } from 'node:http';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { createApiServices, serviceDepsFrom } from '../services';
import { createApp } from '../app';
import { requireSetting, type Config } from '../config';
import { createDb } from '../db/knex';
import { createPostgresRateLimitStores } from '../http/rate-limit-store';
import { createAccessTokens } from '../modules/auth';
import { startWorkerHeartbeat } from '../modules/workers';
import { connectTemporal } from '../temporal/client';
import { createWorker } from '../temporal/worker';
import { startMetricsServer, type MetricsServer } from '../observability/metrics-server';

export interface Endpoints {
  databaseUrl: string;
  temporalAddress: string;
}

export interface StartedApi {
  server: Server;
  url: string;
  /** The Prometheus endpoint on the metrics port, when one is on. */
  metricsUrl?: string;
  close: () => Promise<void>;
}

/**
 * Starts the API on config.HOST:PORT, and its Prometheus metrics on METRICS_HOST:`metricsPort` unless that
 * is 0; resolves once both listen.
 */
export async function startApi(config: Config, endpoints: Endpoints, logger: Logger, options: { metricsPort: number }): Promise<StartedApi> {
  const db = createDb(endpoints.databaseUrl, config.DATABASE_POOL_MAX, logger, { preparedStatements: config.DATABASE_PREPARED_STATEMENTS, queryTimeoutMs: config.API_DATABASE_QUERY_TIMEOUT_MS });
  const temporal = await connectTemporal(config, endpoints.temporalAddress);
  const accessTokens = createAccessTokens(requireSetting(config, 'JWT_SECRET'), config.ACCESS_TOKEN_TTL_SECONDS);
  const services = createApiServices({ ...serviceDepsFrom(config, db), temporal, accessTokens });
  // Shared counters, so that a limit holds across every API replica; memory counts per process.
  const rateLimits = config.RATE_LIMIT_STORE === 'postgres' ? createPostgresRateLimitStores(db, logger) : undefined;
  const app = createApp({ config, logger, accessTokens, services, rateLimitStore: rateLimits?.storeFor });
  const server = await new Promise<Server>((resolve, reject) => {
    const listening = app.listen(config.PORT, config.HOST, () => resolve(listening));
    listening.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://${config.HOST}:${port}`;
  logger.info({ url }, 'API listening');
  let metrics: MetricsServer | undefined;
  if (options.metricsPort > 0) {
    try {
      metrics = await startMetricsServer({
        host: config.METRICS_HOST,
        port: options.metricsPort,
        render: services.metrics.render,
        setting: 'METRICS_PORT',
        onError: (error) => logger.error({ err: error }, 'API metrics not collected'),
      });
    } catch (error) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rateLimits?.close();
      await temporal.connection.close();
      await db.destroy();
      throw error;
    }
    logger.info({ url: metrics.url }, 'API metrics served for Prometheus');
  }
  return {
    server,
    url,
    metricsUrl: metrics?.url,
    close: async () => {
      await metrics?.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rateLimits?.close();
      await temporal.connection.close();
      await db.destroy();
    },
  };
}

/**
 * Starts a worker, one Temporal Worker per task queue, and its heartbeat on the main queue (what /health
 * reads); `stop` asks it to finish its in-flight work and waits for it. A queue's Worker that fails stops
 * the others, so that the process ends rather than serve some queues only.
 */
export async function startWorker(config: Config, endpoints: Endpoints, logger: Logger): Promise<{ stop: () => Promise<void>; done: Promise<void>; db: Knex }> {
  const db = createDb(endpoints.databaseUrl, config.DATABASE_POOL_MAX, logger, { preparedStatements: config.DATABASE_PREPARED_STATEMENTS });
  const { workers, close } = await createWorker({ config, temporalAddress: endpoints.temporalAddress, db, logger });
  const shutdown = () => {
    for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
  };
  const runOne = async (worker: (typeof workers)[number]) => {
    try {
      await worker.run();
    } catch (error) {
      shutdown();
      throw error;
    }
  };
  // Every Worker has stopped, then the first failure, if any, is the process's.
  const running = Promise.allSettled(workers.map(runOne)).then((outcomes) => {
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  });
  const heartbeat = startWorkerHeartbeat({
    db,
    logger,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    identity: workers[0]!.options.identity,
    polling: () => workers.every((worker) => worker.getState() === 'RUNNING'),
  });
  const done = running.finally(async () => {
    await heartbeat.stop();
    await close();
    await db.destroy();
  });
  logger.info({ taskQueues: workers.map((worker) => worker.options.taskQueue) }, 'worker polling');
  return {
    db,
    done,
    stop: async () => {
      shutdown();
      await done;
    },
  };
}

/** Runs `work`, exiting non-zero with a readable message when configuration or start-up fails. */
export function runMain(work: () => Promise<void>): void {
  work().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
