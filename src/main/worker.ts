import { Runtime } from '@temporalio/worker';
import { loadConfig, requireSetting } from '../config';
import { createLogger } from '../logger';
import { workerRuntimeOptions } from '../observability/worker-metrics';
import { runMain, startWorker } from './runtime';

// The Temporal runtime shuts the worker down gracefully on SIGINT and SIGTERM.
runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config);
  // Once per process and before any connection: a connection made first would install the defaults.
  Runtime.install(workerRuntimeOptions(config));
  if (config.WORKER_METRICS_PORT > 0) logger.info({ port: config.WORKER_METRICS_PORT }, 'worker metrics served for Prometheus');
  const worker = await startWorker(
    config,
    { databaseUrl: requireSetting(config, 'DATABASE_URL'), temporalAddress: requireSetting(config, 'TEMPORAL_ADDRESS') },
    logger,
  );
  await worker.done;
  logger.info('worker stopped');
});
