import { Runtime } from '@temporalio/worker';
import { loadConfig, requireSetting } from '../config';
import { createLogger } from '../logger';
import { startMetricsServer } from '../observability/metrics-server';
import { createWorkerMetrics } from '../observability/worker-metrics';
import { runMain, startWorker } from './runtime';

// The Temporal runtime shuts the worker down gracefully on SIGINT and SIGTERM.
runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config);
  // Off unless set: production names its metrics port (docs/deployment.md).
  const metricsPort = config.WORKER_METRICS_PORT ?? 0;
  const metrics = metricsPort > 0 ? await createWorkerMetrics() : undefined;
  // Once per process and before any connection: a connection made first would install the defaults.
  Runtime.install({ ...metrics?.runtimeOptions });
  const metricsServer = metrics
    ? await startMetricsServer({
        host: config.METRICS_HOST,
        port: metricsPort,
        render: metrics.render,
        setting: 'WORKER_METRICS_PORT',
        onError: (error) => logger.error({ err: error }, 'worker metrics not collected'),
      })
    : undefined;
  if (metricsServer) logger.info({ url: metricsServer.url }, 'worker metrics served for Prometheus');
  const worker = await startWorker(
    config,
    { databaseUrl: requireSetting(config, 'DATABASE_URL'), temporalAddress: requireSetting(config, 'TEMPORAL_ADDRESS') },
    logger,
  );
  await worker.done;
  await metricsServer?.close();
  logger.info('worker stopped');
});
