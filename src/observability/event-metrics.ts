import { Counter } from 'prom-client';
import type { EventSubscriber } from '../events/relay';

/**
 * The domain events this process's relay handed on, by type: how much of each kind of change the product
 * makes, for dashboards and alerts. Registered on the worker's metrics (./worker-metrics.ts).
 */
export const domainEventsRelayed = new Counter({
  name: 'billing_domain_events_relayed_total',
  help: 'Domain events the outbox relay of this worker handed to their subscribers, by type',
  labelNames: ['type'],
  registers: [],
});

/** Metrics as a subscriber of the domain events: counted once the relay's batch has committed. */
export function metricsSubscriber(): EventSubscriber {
  return {
    name: 'metrics',
    committed: (events) => {
      for (const event of events) domainEventsRelayed.inc({ type: event.type });
    },
  };
}
