import type { Request, RequestHandler } from 'express';
import type { Knex } from 'knex';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { INVOICE_STATES } from '../domain/invoice-state';
import type { UsageBatchRow } from '../modules/usage';
import { HEARTBEAT_FRESH_SECONDS, heartbeatsIn } from '../modules/workers';
import type { MetricsText } from './metrics-server';

/** The route label of a request no route matched (a 404, /docs assets), so that raw paths never become labels. */
export const UNMATCHED_ROUTE = '(unmatched)';

/** The status label of a request whose client went away before the answer was complete. */
export const CLIENT_CLOSED_STATUS = '499';

/** How long a scrape waits for the figures read from Postgres; past it the figures are left out. */
export const FIGURES_TIMEOUT_MS = 2_000;

/** How old the counts by status may be before a scrape reads them again (METRICS_COUNTS_MAX_AGE_SECONDS). */
export const COUNTS_MAX_AGE_SECONDS = 60;

/**
 * Node's default gauges that prom-client names `_total`, a suffix Prometheus keeps for counters
 * (`promtool check metrics` reports each). The same figures by type remain (`nodejs_active_handles{type}`
 * and the others); their sum is the total.
 */
const GAUGES_NAMED_AS_COUNTERS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Every status is reported, zero included, so that a series does not vanish when its last row changes. */
const USAGE_BATCH_STATUSES = ['processing', 'completed', 'failed', 'abandoned'] as const satisfies readonly UsageBatchRow['status'][];

/** From a few milliseconds (reads) to the 10 s and more of a large batch upload or an export. */
const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface StatusCount {
  status: string;
  count: number;
}

/** Rows of one table by status, over every organisation, read with the given handle by the table's own repository. */
export type StatusCounter = (db: Knex) => Promise<StatusCount[]>;

export interface ApiMetricsDeps {
  db: Knex;
  /** The queue whose worker count is always reported, zero included. */
  taskQueue: string;
  usageBatchesByStatus: StatusCounter;
  invoicesByStatus: StatusCounter;
  figuresTimeoutMs?: number;
  /** How old the counts by status may be before a scrape reads them again; 0 reads them at every scrape. */
  countsMaxAgeSeconds?: number;
  /** The clock of the counts' age, in milliseconds. */
  now?: () => number;
}

export interface ApiMetrics {
  /** Counts and times every request; mount it before any route. */
  middleware: RequestHandler;
  /**
   * The declared path a request path names, for a request no route took (refused before routing: a body
   * too large, malformed JSON, a method the path lacks); without it, such a request is `(unmatched)`.
   */
  declareRoutes: (templateOf: (path: string) => string | undefined) => void;
  /** The Prometheus text format, for the metrics port (never the API's own port). */
  render: () => Promise<MetricsText>;
}

interface Counts {
  usageBatches: StatusCount[];
  invoices: StatusCount[];
}

/** What a read gave, and when it began. */
export interface Reading<T> {
  value: T;
  readAt: number;
}

/**
 * The matched route as documented (`/customers/{id}`), whatever ids the path held; for a request no route
 * took, the declared path its path names (`declared`), else `(unmatched)`.
 */
export function routeTemplate(req: Pick<Request, 'route'> & { path?: string }, declared?: (path: string) => string | undefined): string {
  const path: unknown = req.route?.path;
  if (typeof path === 'string') return path.replace(/:(\w+)/g, '{$1}');
  return (req.path !== undefined ? declared?.(req.path) : undefined) ?? UNMATCHED_ROUTE;
}

/** Resolves undefined when `promise` fails or has not settled within `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A read from Postgres shared by the concurrent callers of one scrape: while a read is under way, later
 * callers wait on it rather than start another, so that a stuck database never collects a pile of queries.
 * A caller waits at most `timeoutMs` and gets undefined past it, or when the read failed.
 */
function sharedRead<T>(read: () => Promise<T>, timeoutMs: number): () => Promise<T | undefined> {
  let reading: Promise<T> | undefined;
  return () => {
    reading ??= read().finally(() => {
      reading = undefined;
    });
    return within(reading, timeoutMs);
  };
}

/**
 * A read reused for `maxAgeMs` after it began: a scrape within that time gets the same reading without
 * touching Postgres. A read that failed or ran out of time is not tried again before `maxAgeMs` either, so
 * that a database too slow for the read is not sent it at every scrape; meanwhile the reading is absent.
 * `maxAgeMs` 0 reads at every call.
 */
export function cachedRead<T>(read: () => Promise<T | undefined>, options: { maxAgeMs: number; now: () => number }): () => Promise<Reading<T> | undefined> {
  let last: { attemptedAt: number; reading: Reading<T> | undefined } | undefined;
  let reading: Promise<Reading<T> | undefined> | undefined;
  return async () => {
    if (last && options.now() - last.attemptedAt < options.maxAgeMs) return last.reading;
    reading ??= (async () => {
      const attemptedAt = options.now();
      const value = await read().catch(() => undefined);
      last = { attemptedAt, reading: value === undefined ? undefined : { value, readAt: attemptedAt } };
      return last.reading;
    })().finally(() => {
      reading = undefined;
    });
    return reading;
  };
}

/** Statements of a read-only transaction that Postgres cancels past the time bound. */
function boundedReadOnly<T>(db: Knex, timeoutMs: number, read: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return db.transaction(
    async (trx) => {
      await trx.raw(`SET LOCAL statement_timeout = ${Math.round(timeoutMs)}`);
      return read(trx);
    },
    { readOnly: true },
  );
}

function setByStatus(gauge: Gauge<'status'>, known: readonly string[], counts: StatusCount[]): void {
  for (const status of known) gauge.set({ status }, 0);
  for (const { status, count } of counts) gauge.set({ status }, count);
}

/** knex's tarn pool, when it has one (none after destroy()). */
function tarnPool(db: Knex) {
  const pool = db.client.pool;
  return pool && 'numUsed' in pool ? pool : undefined;
}

function registerPoolGauges(registry: Registry, db: Knex): void {
  const gauges = [
    ['billing_db_pool_used_connections', 'Postgres connections lent out by the pool', () => tarnPool(db)?.numUsed()],
    ['billing_db_pool_free_connections', 'Idle Postgres connections in the pool', () => tarnPool(db)?.numFree()],
    ['billing_db_pool_pending_acquires', 'Queries waiting for a Postgres connection from the pool', () => tarnPool(db)?.numPendingAcquires()],
    ['billing_db_pool_max_connections', 'Most Postgres connections the pool opens (DATABASE_POOL_MAX)', () => tarnPool(db)?.max],
  ] as const;
  for (const [name, help, read] of gauges) {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read() ?? 0);
      },
    });
  }
}

function registerFigureGauges(registry: Registry, deps: ApiMetricsDeps): void {
  const timeoutMs = deps.figuresTimeoutMs ?? FIGURES_TIMEOUT_MS;
  const now = deps.now ?? Date.now;
  // The heartbeats (a few rows) at every scrape: a dead worker must show within one scrape.
  const heartbeats = sharedRead(() => boundedReadOnly(deps.db, timeoutMs, (trx) => heartbeatsIn(trx).summary(HEARTBEAT_FRESH_SECONDS)), timeoutMs);
  // The counts by status go over whole tables: read at most once per max age, whatever the scrapes.
  const counts = cachedRead(
    sharedRead(
      () => boundedReadOnly(deps.db, timeoutMs, async (trx): Promise<Counts> => ({ usageBatches: await deps.usageBatchesByStatus(trx), invoices: await deps.invoicesByStatus(trx) })),
      timeoutMs,
    ),
    { maxAgeMs: (deps.countsMaxAgeSeconds ?? COUNTS_MAX_AGE_SECONDS) * 1000, now },
  );
  // Left out of a scrape whose read failed or ran out of time, rather than repeating stale values.
  new Gauge({
    name: 'billing_figures_up',
    help: '1 when this scrape has the usage batch and invoice counts and read the worker heartbeats from Postgres in time, else 0',
    registers: [registry],
    async collect() {
      const [beats, counted] = await Promise.all([heartbeats(), counts()]);
      this.set(beats && counted ? 1 : 0);
    },
  });
  new Gauge({
    name: 'billing_status_counts_age_seconds',
    help: 'Age of the counts by status of a table (billing_usage_batches, billing_invoices) in this scrape; read again once older than METRICS_COUNTS_MAX_AGE_SECONDS',
    labelNames: ['table'],
    registers: [registry],
    async collect() {
      const counted = await counts();
      this.reset();
      if (!counted) return;
      const age = Math.max(0, now() - counted.readAt) / 1000;
      for (const table of ['usage_batches', 'invoices']) this.set({ table }, age);
    },
  });
  new Gauge({
    name: 'billing_usage_batches',
    help: 'Usage batches by status, over every organisation',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const counted = await counts();
      this.reset();
      if (counted) setByStatus(this, USAGE_BATCH_STATUSES, counted.value.usageBatches);
    },
  });
  new Gauge({
    name: 'billing_invoices',
    help: 'Invoices (not deleted) by status, over every organisation',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const counted = await counts();
      this.reset();
      if (counted) setByStatus(this, INVOICE_STATES, counted.value.invoices);
    },
  });
  new Gauge({
    name: 'billing_workers_alive',
    help: `Workers whose heartbeat is at most ${HEARTBEAT_FRESH_SECONDS} s old, by task queue`,
    labelNames: ['task_queue'],
    registers: [registry],
    async collect() {
      const read = await heartbeats();
      this.reset();
      if (!read) return;
      this.set({ task_queue: deps.taskQueue }, 0);
      for (const queue of read) this.set({ task_queue: queue.taskQueue }, queue.alive);
    },
  });
  new Gauge({
    name: 'billing_worker_heartbeat_age_seconds',
    help: 'Age of the newest worker heartbeat, by task queue (queues silent for an hour are forgotten)',
    labelNames: ['task_queue'],
    registers: [registry],
    async collect() {
      const read = await heartbeats();
      this.reset();
      for (const queue of read ?? []) this.set({ task_queue: queue.taskQueue }, queue.newestAgeSeconds);
    },
  });
}

function httpInstruments(registry: Registry, declared: () => ((path: string) => string | undefined) | undefined): RequestHandler {
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered, by method, route template and status', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to the end of its answer, by method, route template and status',
    labelNames,
    buckets: LATENCY_BUCKETS_SECONDS,
    registers: [registry],
  });
  return (req, res, next) => {
    const stopTimer = duration.startTimer();
    // `close` comes after the answer is sent, or when the client leaves first; the route is known by then.
    res.once('close', () => {
      const labels = {
        method: METHODS.has(req.method) ? req.method : 'OTHER',
        route: routeTemplate(req, declared()),
        status: res.writableFinished ? String(res.statusCode) : CLIENT_CLOSED_STATUS,
      };
      requests.inc(labels);
      stopTimer(labels);
    });
    next();
  };
}

/**
 * Node's process metrics (CPU, memory, event-loop lag, GC, handles) under their usual names, less the
 * gauges prom-client names like counters.
 */
export function registerProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of GAUGES_NAMED_AS_COUNTERS) registry.removeSingleMetric(name);
}

/**
 * The API's Prometheus metrics, in a registry of their own (one per app, so that several apps can live in
 * one process): HTTP traffic, the Postgres pool, figures read from Postgres (the same on every replica),
 * and Node's process metrics. They are served on the metrics port (METRICS_PORT), never on the API's own.
 * docs/observability.md describes each.
 */
export function createApiMetrics(deps: ApiMetricsDeps): ApiMetrics {
  const registry = new Registry();
  registerProcessMetrics(registry);
  registerPoolGauges(registry, deps.db);
  registerFigureGauges(registry, deps);
  let templateOf: ((path: string) => string | undefined) | undefined;
  return {
    middleware: httpInstruments(registry, () => templateOf),
    declareRoutes: (lookup) => {
      templateOf = lookup;
    },
    render: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  };
}
