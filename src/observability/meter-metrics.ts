import { Counter } from 'prom-client';

/**
 * Folds of the chunks pending for meters' organisation-wide totals that this worker ran, by outcome:
 * `folded` (a statement of chunks taken, or none left), `busy` (another fold of the organisation held its
 * lock: tried again a second later) and `failed` (tried again, further apart, up to five times). A rising
 * `failed` with a flat `folded` means totals are not kept up: reads stay exact, only slower. Registered on
 * the worker's metrics (./worker-metrics.ts).
 */
export const meterTotalsFolds = new Counter({
  name: 'billing_meter_totals_folds_total',
  help: "Folds of chunks pending for meters' organisation-wide totals in this worker, by outcome (folded, busy, failed)",
  labelNames: ['outcome'],
  registers: [],
});
