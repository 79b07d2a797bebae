import type { RuntimeOptions } from '@temporalio/worker';
import type { Config } from '../config';

/**
 * The Temporal runtime's options for a worker process: with WORKER_METRICS_PORT set, the SDK serves its
 * own metrics (task slots, poll and schedule-to-start latencies, failures, sticky cache) in the Prometheus
 * text format on that port, on every interface, for Prometheus to scrape. The runtime is installed once
 * per process, before the first connection.
 */
export function workerRuntimeOptions(config: Pick<Config, 'WORKER_METRICS_PORT'>): RuntimeOptions {
  if (config.WORKER_METRICS_PORT === 0) return {};
  return { telemetryOptions: { metrics: { prometheus: { bindAddress: `0.0.0.0:${config.WORKER_METRICS_PORT}` } } } };
}
