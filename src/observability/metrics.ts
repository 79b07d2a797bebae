import type { Request, RequestHandler } from 'express';
import type { Knex } from 'knex';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { INVOICE_STATES } from '../domain/invoice-state';
import type { UsageBatchRow } from '../modules/usage/usage.repository';
import { HEARTBEAT_FRESH_SECONDS } from '../modules/workers/worker-heartbeat.service';
import { createWorkerHeartbeatRepository, type TaskQueueHeartbeats } from '../modules/workers/workers.repository';

/** The route label of a request no route matched (a 404, /docs assets), so that raw paths never become labels. */
export const UNMATCHED_ROUTE = '(unmatched)';

/** The status label of a request whose client went away before the answer was complete. */
export const CLIENT_CLOSED_STATUS = '499';

/** How long a scrape waits for the figures read from Postgres; past it the figures are left out. */
export const FIGURES_TIMEOUT_MS = 2_000;

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
}

export interface ApiMetrics {
  /** Counts and times every request; mount it before any route. */
  middleware: RequestHandler;
  /** Answers the Prometheus text format. */
  handler: RequestHandler;
}

interface Figures {
  usageBatches: StatusCount[];
  invoices: StatusCount[];
  heartbeats: TaskQueueHeartbeats[];
}

/** The matched route as documented (`/customers/{id}`), whatever ids the path held. */
export function routeTemplate(req: Pick<Request, 'route'>): string {
  const path: unknown = req.route?.path;
  return typeof path === 'string' ? path.replace(/:(\w+)/g, '{$1}') : UNMATCHED_ROUTE;
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
 * The figures of one scrape, read from Postgres in one read-only transaction whose statements Postgres
 * cancels past the time bound. While a read is under way, later scrapes wait on it rather than start
 * another, so that a stuck database never collects a pile of queries.
 */
function figuresReader(deps: ApiMetricsDeps, timeoutMs: number): () => Promise<Figures | undefined> {
  let reading: Promise<Figures> | undefined;
  const read = () =>
    deps.db.transaction(
      async (trx): Promise<Figures> => {
        await trx.raw(`SET LOCAL statement_timeout = ${Math.round(timeoutMs)}`);
        const usageBatches = await deps.usageBatchesByStatus(trx);
        const invoices = await deps.invoicesByStatus(trx);
        const heartbeats = await createWorkerHeartbeatRepository(trx).summary(HEARTBEAT_FRESH_SECONDS);
        return { usageBatches, invoices, heartbeats };
      },
      { readOnly: true },
    );
  return () => {
    reading ??= read().finally(() => {
      reading = undefined;
    });
    return within(reading, timeoutMs);
  };
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
  const figures = figuresReader(deps, deps.figuresTimeoutMs ?? FIGURES_TIMEOUT_MS);
  // Left out of a scrape whose read failed or ran out of time, rather than repeating stale values.
  new Gauge({
    name: 'billing_figures_up',
    help: '1 when this scrape read the usage, invoice and worker figures from Postgres in time, else 0',
    registers: [registry],
    async collect() {
      this.set((await figures()) ? 1 : 0);
    },
  });
  new Gauge({
    name: 'billing_usage_batches',
    help: 'Usage batches by status, over every organisation',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const read = await figures();
      this.reset();
      if (read) setByStatus(this, USAGE_BATCH_STATUSES, read.usageBatches);
    },
  });
  new Gauge({
    name: 'billing_invoices',
    help: 'Invoices (not deleted) by status, over every organisation',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const read = await figures();
      this.reset();
      if (read) setByStatus(this, INVOICE_STATES, read.invoices);
    },
  });
  new Gauge({
    name: 'billing_workers_alive',
    help: `Workers whose heartbeat is at most ${HEARTBEAT_FRESH_SECONDS} s old, by task queue`,
    labelNames: ['task_queue'],
    registers: [registry],
    async collect() {
      const read = await figures();
      this.reset();
      if (!read) return;
      this.set({ task_queue: deps.taskQueue }, 0);
      for (const queue of read.heartbeats) this.set({ task_queue: queue.taskQueue }, queue.alive);
    },
  });
  new Gauge({
    name: 'billing_worker_heartbeat_age_seconds',
    help: 'Age of the newest worker heartbeat, by task queue (queues silent for an hour are forgotten)',
    labelNames: ['task_queue'],
    registers: [registry],
    async collect() {
      const read = await figures();
      this.reset();
      for (const queue of read?.heartbeats ?? []) this.set({ task_queue: queue.taskQueue }, queue.newestAgeSeconds);
    },
  });
}

function httpInstruments(registry: Registry): RequestHandler {
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
        route: routeTemplate(req),
        status: res.writableFinished ? String(res.statusCode) : CLIENT_CLOSED_STATUS,
      };
      requests.inc(labels);
      stopTimer(labels);
    });
    next();
  };
}

/**
 * The API's Prometheus metrics, in a registry of their own (one per app, so that several apps can live in
 * one process): HTTP traffic, the Postgres pool, figures read from Postgres at scrape time (the same on
 * every replica), and Node's process metrics. docs/observability.md describes each.
 */
export function createApiMetrics(deps: ApiMetricsDeps): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  registerPoolGauges(registry, deps.db);
  registerFigureGauges(registry, deps);
  return {
    middleware: httpInstruments(registry),
    handler: async (_req, res) => {
      const text = await registry.metrics();
      res.set('Content-Type', registry.contentType).set('Cache-Control', 'no-store').send(text);
    },
  };
}
