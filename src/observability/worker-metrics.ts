import type { RuntimeOptions } from '@temporalio/worker';
import { Gauge, Registry } from 'prom-client';
import { freePort } from '../temporal/dev-server';
import { domainEventsRelayed } from './event-metrics';
import { meterTotalsFolds } from './meter-metrics';
import { registerProcessMetrics } from './metrics';
import type { MetricsText } from './metrics-server';

/** How long a scrape waits for the Temporal SDK's own exporter, in this process. */
const SDK_SCRAPE_TIMEOUT_MS = 2_000;

export interface WorkerMetrics {
  /** The Temporal runtime's telemetry: install it once per process, before the first connection. */
  runtimeOptions: Pick<RuntimeOptions, 'telemetryOptions'>;
  /** The SDK's metrics and the process's own, in the Prometheus text format, for the metrics port. */
  render: () => Promise<MetricsText>;
}

/**
 * A worker process's metrics. The Temporal SDK (its Rust core) exports its metrics (task slots, poll and
 * schedule-to-start latencies, failures, sticky cache) only through an HTTP exporter of its own; it is
 * bound to a free port on 127.0.0.1, inside this process's host, and each scrape of the worker's metrics
 * port reads it and adds Node's process metrics. Counters get the `_total` suffix, as Prometheus names
 * them; durations stay in milliseconds, as the SDK records them.
 */
export async function createWorkerMetrics(): Promise<WorkerMetrics> {
  const sdkPort = await freePort();
  const sdkUrl = `http://127.0.0.1:${sdkPort}/metrics`;
  const registry = new Registry();
  registerProcessMetrics(registry);
  registry.registerMetric(domainEventsRelayed);
  registry.registerMetric(meterTotalsFolds);
  const sdkUp = new Gauge({
    name: 'billing_worker_sdk_metrics_up',
    help: "1 when this scrape read the Temporal SDK's metrics (the temporal_* series), else 0",
    registers: [registry],
  });
  return {
    runtimeOptions: { telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${sdkPort}`, countersTotalSuffix: true } } } },
    render: async () => {
      const sdk = await fetch(sdkUrl, { signal: AbortSignal.timeout(SDK_SCRAPE_TIMEOUT_MS) })
        .then(async (res) => (res.ok ? res.text() : undefined))
        .catch(() => undefined);
      sdkUp.set(sdk === undefined ? 0 : 1);
      const own = await registry.metrics();
      const sdkText = !sdk || sdk.endsWith('\n') ? (sdk ?? '') : `${sdk}\n`;
      return { contentType: registry.contentType, body: `${sdkText}${own}` };
    },
  };
}
