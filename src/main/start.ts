import fs from 'node:fs';
import path from 'node:path';
import { Runtime } from '@temporalio/worker';
import type { Logger } from 'pino';
import { loadConfig, requireSetting, type Config } from '../config';
import { createDb, migrateLatest } from '../db/knex';
import { createLogger } from '../logger';
import { startMetricsServer } from '../observability/metrics-server';
import { createWorkerMetrics, type WorkerMetrics } from '../observability/worker-metrics';
import {
  LAPTOP_METRICS_PORT,
  LAPTOP_WORKER_METRICS_PORT,
  laptopSecret,
  laptopTemporalBinary,
  startEmbeddedPostgres,
  startLaptopTemporal,
  type LaptopProcess,
} from './laptop';
import { runMain, startApi, startWorker } from './runtime';

/**
 * `npm start`: the laptop all-in-one. Starts embedded PostgreSQL and the Temporal dev server unless
 * DATABASE_URL / TEMPORAL_ADDRESS name others (fetching the Temporal CLI into DATA_DIR/tools on a machine
 * that has none), migrates, then runs the worker and the API, each with its Prometheus metrics on a port of
 * its own (9465 and 9464 on METRICS_HOST unless set; 0 turns one off). Ctrl-C stops them
 * in reverse order (API, worker, Temporal, PostgreSQL); a second Ctrl-C forces the exit.
 */

/** Signals closer together than this are one Ctrl-C passed on by several wrappers, not a second one. */
const REPEATED_SIGNAL_MS = 1000;

class StopRequested extends Error {}

/** What this process started, stopped in reverse order of starting. */
class Supervisor {
  private readonly parts: (LaptopProcess & { name: string })[] = [];
  private exitCode: number | undefined;
  private wake: () => void = () => undefined;
  readonly stopRequested = new Promise<void>((resolve) => {
    this.wake = resolve;
  });

  constructor(private readonly logger: Logger) {}

  get stopping(): boolean {
    return this.exitCode !== undefined;
  }

  requestStop(exitCode: number): void {
    this.exitCode ??= exitCode;
    this.wake();
  }

  /** Starts a part unless a stop was requested; one that comes up after the request is stopped with the rest. */
  async start<T extends LaptopProcess>(name: string, begin: () => Promise<T>): Promise<T> {
    if (this.stopping) throw new StopRequested();
    const part = await begin();
    this.parts.push({ name, stop: () => part.stop(), kill: part.kill });
    if (this.stopping) throw new StopRequested();
    return part;
  }

  /** A part leaves the list only once stopped, so that a forced exit still kills the one being stopped. */
  async stopAll(): Promise<number> {
    for (let part = this.parts.at(-1); part; part = this.parts.at(-1)) {
      this.logger.info(`stopping ${part.name}`);
      try {
        await part.stop();
      } catch (error) {
        this.exitCode = 1;
        this.logger.error({ err: error }, `${part.name} did not stop cleanly`);
      }
      this.parts.pop();
    }
    return this.exitCode ?? 0;
  }

  kill(): void {
    for (const part of this.parts) part.kill?.();
  }
}

interface Addresses {
  api: string;
  apiMetrics?: string;
  workerMetrics?: string;
  temporalUi?: string;
  temporalAddress: string;
  database?: string;
}

function printSummary(config: Config, urls: Addresses): void {
  const lines = [
    '',
    'billing-metering is running',
    `  API             ${urls.api}`,
    `  API docs        ${urls.api}/docs`,
    `  API metrics     ${urls.apiMetrics ?? 'off (METRICS_PORT=0)'}`,
    `  Worker metrics  ${urls.workerMetrics ?? 'off (WORKER_METRICS_PORT=0)'}`,
    urls.temporalUi ? `  Temporal UI     ${urls.temporalUi}` : `  Temporal        ${urls.temporalAddress}`,
    ...(urls.database ? [`  PostgreSQL      ${urls.database}`] : []),
    `  Data            ${path.resolve(config.DATA_DIR)}`,
    'Press Ctrl-C to stop.',
    '',
  ];
  process.stderr.write(lines.join('\n'));
}

async function startEverything(config: Config, logger: Logger, supervisor: Supervisor, workerMetrics: WorkerMetrics | undefined): Promise<void> {
  fs.mkdirSync(config.DATA_DIR, { recursive: true });
  // First, as the first start may have to fetch it: a machine without one learns so before anything runs.
  const temporalBinary = config.TEMPORAL_ADDRESS ? undefined : await laptopTemporalBinary(config);

  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) databaseUrl = (await supervisor.start('embedded PostgreSQL', () => startEmbeddedPostgres(config, logger))).url;
  const db = createDb(databaseUrl, 2);
  try {
    const applied = await migrateLatest(db);
    logger.info({ applied: applied.length }, 'migrations applied');
  } finally {
    await db.destroy();
  }

  let temporalAddress: string;
  let temporalUi: string | undefined;
  if (temporalBinary) {
    const temporal = await supervisor.start('Temporal dev server', () => startLaptopTemporal(config, temporalBinary, logger));
    temporalAddress = temporal.address;
    temporalUi = temporal.uiUrl;
  } else {
    temporalAddress = requireSetting(config, 'TEMPORAL_ADDRESS');
  }
  const endpoints = { databaseUrl, temporalAddress };

  const workerMetricsServer = workerMetrics
    ? await supervisor.start('worker metrics', async () => {
        const started = await startMetricsServer({
          host: config.METRICS_HOST,
          port: config.WORKER_METRICS_PORT ?? LAPTOP_WORKER_METRICS_PORT,
          render: workerMetrics.render,
          setting: 'WORKER_METRICS_PORT',
          onError: (error) => logger.error({ err: error }, 'worker metrics not collected'),
        });
        return { url: started.url, stop: started.close };
      })
    : undefined;
  const worker = await supervisor.start('worker', () => startWorker(config, endpoints, logger));
  const onWorkerEnd = (error?: unknown) => {
    if (supervisor.stopping) return;
    logger.error({ err: error }, 'the worker stopped on its own; stopping everything');
    supervisor.requestStop(1);
  };
  worker.done.then(() => onWorkerEnd(), onWorkerEnd);

  const api = await supervisor.start('API', async () => {
    const started = await startApi(config, endpoints, logger, { metricsPort: config.METRICS_PORT ?? LAPTOP_METRICS_PORT });
    return { url: started.url, metricsUrl: started.metricsUrl, stop: started.close };
  });

  // DATABASE_URL may hold a real password: only the embedded one is shown.
  printSummary(config, {
    api: api.url,
    apiMetrics: api.metricsUrl,
    workerMetrics: workerMetricsServer?.url,
    temporalUi,
    temporalAddress,
    database: config.DATABASE_URL ? undefined : databaseUrl,
  });
}

runMain(async () => {
  const fromEnvironment = loadConfig();
  const config: Config = {
    ...fromEnvironment,
    JWT_SECRET: fromEnvironment.JWT_SECRET ?? laptopSecret(fromEnvironment, 'jwt-secret', 'JWT_SECRET'),
    SECRETS_KEY: fromEnvironment.SECRETS_KEY ?? laptopSecret(fromEnvironment, 'secrets-key', 'SECRETS_KEY'),
  };
  const logger = createLogger(config);
  // The Temporal runtime would shut the worker down by itself on SIGINT/SIGTERM; here the worker must stop
  // after the API and before the Temporal server, so the supervisor does it. Its metrics exporter, when
  // the worker's metrics are on, is part of the runtime too.
  const workerMetrics = (config.WORKER_METRICS_PORT ?? LAPTOP_WORKER_METRICS_PORT) > 0 ? await createWorkerMetrics() : undefined;
  Runtime.install({ shutdownSignals: [], ...workerMetrics?.runtimeOptions });

  const supervisor = new Supervisor(logger);
  let firstSignalAt: number | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (firstSignalAt === undefined) {
      firstSignalAt = Date.now();
      logger.info({ signal }, 'stopping (press Ctrl-C again to force)');
      supervisor.requestStop(0);
      return;
    }
    // One Ctrl-C can arrive more than once: `timeout` re-sends it to its process group, and tsx relays it.
    if (Date.now() - firstSignalAt < REPEATED_SIGNAL_MS) return;
    logger.warn({ signal }, 'forced exit');
    process.exit(130);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
  // Last resort for a forced or unexpected exit: no child process may outlive us.
  process.on('exit', () => supervisor.kill());

  let startupError: unknown;
  try {
    await startEverything(config, logger, supervisor, workerMetrics);
    await supervisor.stopRequested;
  } catch (error) {
    // A failure after a stop was requested is a part losing what it depends on while starting.
    if (!supervisor.stopping) startupError = error;
    else if (!(error instanceof StopRequested)) logger.info({ err: error }, 'start-up interrupted');
  }
  const exitCode = await supervisor.stopAll();
  if (startupError) throw startupError;
  logger.info('stopped');
  // Connections left by a part that failed while starting must not keep the process alive.
  process.exit(exitCode);
});
