import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
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
} from './laptop';
import { runMain, startApi, startWorker } from './runtime';
import { StopRequested, Supervisor } from './supervisor';

/**
 * `npm start`: the laptop all-in-one. Starts embedded PostgreSQL and the Temporal dev server unless
 * DATABASE_URL / TEMPORAL_ADDRESS name others (fetching the Temporal CLI into DATA_DIR/tools on a machine
 * that has none), migrates, then runs the worker and the API, each with its Prometheus metrics on a port of
 * its own (9465 and 9464 on METRICS_HOST unless set; 0 turns one off). All of it runs in a child process
 * group, out of the terminal's reach: Ctrl-C stops the parts in reverse order (API, worker within
 * WORKER_SHUTDOWN_GRACE_SECONDS and a margin, Temporal, PostgreSQL); a second Ctrl-C forces the exit.
 */

/**
 * Signals closer together than this are one Ctrl-C passed on by several wrappers, not a second one. npm
 * relays the terminal's Ctrl-C to the launcher, which already had it from the terminal: on a loaded machine
 * the relayed copy has come more than a second after the first, and forced the exit.
 */
const REPEATED_SIGNAL_MS = 3000;

/** Set in the environment of the process that runs the stack, in a process group of its own. */
const STACK_PROCESS = 'BILLING_START_STACK';

/**
 * Beyond WORKER_SHUTDOWN_GRACE_SECONDS, the time the worker is given to cancel what is still running and
 * close its connections before the rest is stopped without it.
 */
const WORKER_STOP_MARGIN_MS = 10_000;

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
  const worker = await supervisor.start('worker', () => startWorker(config, endpoints, logger), {
    stopWithinMs: config.WORKER_SHUTDOWN_GRACE_SECONDS * 1000 + WORKER_STOP_MARGIN_MS,
  });
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

/**
 * The process a terminal runs: the stack runs in a child in a process group of its own, so that the
 * terminal's Ctrl-C reaches none of PostgreSQL, the Temporal dev server, the worker and the API at once;
 * this one passes each signal on, and the child stops them in order. It ends with the child.
 */
function launch(): void {
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    detached: true,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [STACK_PROCESS]: '1' },
  });
  const forward = (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, forward);
  child.once('error', (error) => {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  });
  child.once('exit', (code, signal) => process.exit(code ?? 128 + (signal ? os.constants.signals[signal] : 0)));
}

function runStack(): void {
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
      // One Ctrl-C can arrive more than once: `timeout` re-sends it to its process group, and npm relays it.
      if (Date.now() - firstSignalAt < REPEATED_SIGNAL_MS) return;
      logger.warn({ signal }, 'forced exit');
      process.exit(130);
    };
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
    // The launcher gone (killed outright), nothing would pass a Ctrl-C on any more: stop as if one came.
    process.on('disconnect', () => onSignal('SIGHUP'));
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
}

if (process.env[STACK_PROCESS] === '1') runStack();
else launch();
