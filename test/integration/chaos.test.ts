import { createTenant, type Tenant, type TestApi } from './support/harness';
import { createCustomerEntity } from './support/fixtures';
import { startBreakableStack, type BreakableStack } from './support/breakable-stack';
import { describeAnswers, pollBatch, startClients, type ClientLoad, type ClientOptions, type SentBatch } from './support/chaos-clients';

// About a minute of load and outages when all goes well; every wait below is bounded well within this.
jest.setTimeout(180_000);

/** How long each dependency stays away. */
const OUTAGE_MS = 10_000;
/** Every answer, whatever is down, comes within this. */
const ANSWER_WITHIN_MS = 10_000;

let stack: BreakableStack;
let api: TestApi;
let tenant: Tenant;
let entityId: string;
let load: ClientLoad | undefined;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once some client's batch, sent after `since`, was ingested within its request (a 200). */
async function recovered(since: number, what: string): Promise<void> {
  const deadline = Date.now() + 45_000;
  while (!load!.answers.some((answer) => answer.sentAt > since && answer.method === 'POST' && answer.status === 200)) {
    if (Date.now() > deadline) throw new Error(`no batch went through within 45 s after ${what}: ${describeAnswers(load!.answers)}`);
    const worker = stack.worker();
    if (worker && worker.exitCode !== null) throw new Error(`the worker exited (${worker.exitCode}) after ${what}; see ${stack.workDir}/worker.log`);
    await sleep(250);
  }
}

beforeAll(async () => {
  stack = await startBreakableStack('chaos');
  api = stack.api;
  tenant = await createTenant(api, 'chaos');
  ({ entityId } = await createCustomerEntity(api, tenant));
});

afterAll(async () => {
  load?.abort();
  await stack?.close();
});

it('when Temporal, Postgres and the worker each go away for 10 s under four clients posting batches, then every request answers 200, 202 or 503 within 10 s and every event is stored exactly once', async () => {
  const client: ClientOptions = {
    url: api.url,
    token: tenant.systemToken,
    entityId,
    clients: 4,
    minEvents: 50,
    maxEvents: 200,
    retryPauseMs: 500,
    requestTimeoutMs: 30_000,
  };
  load = startClients(client);
  await recovered(0, 'the start');
  await sleep(2_000);

  // Temporal: killed outright, then started again on the same port with the same state.
  await stack.killTemporal();
  await sleep(OUTAGE_MS);
  await stack.startTemporal();
  await recovered(Date.now(), 'Temporal came back');
  await sleep(2_000);

  // Postgres: every connection of the API and the worker dropped, new ones refused.
  stack.proxy.cut();
  await sleep(OUTAGE_MS);
  stack.proxy.restore();
  await recovered(Date.now(), 'Postgres came back');
  await sleep(2_000);

  // The worker: killed in the middle of its work, a new one started after the outage.
  await stack.killWorker();
  await sleep(OUTAGE_MS);
  await stack.startWorker();
  await recovered(Date.now(), 'the worker came back');
  await sleep(2_000);

  await load.stop(30_000);
  const { answers, batches } = load;

  // Every batch a client was told is under way is read until it is no longer processing.
  const pollDeadline = Date.now() + 60_000;
  const pending = batches.filter((batch) => batch.status === 202);
  const records = await Promise.all(pending.map((batch) => pollBatch(client, batch, answers, pollDeadline, load!.signal)));
  console.info(`chaos: ${batches.length} batches, ${answers.length} answers: ${describeAnswers(answers)}`);

  // Every request answered 200, 202 or 503 (a read, 200) within the bound.
  const posts = answers.filter((answer) => answer.method === 'POST');
  expect(posts.filter((answer) => ![200, 202, 503].includes(answer.status))).toEqual([]);
  expect(answers.filter((answer) => answer.method === 'GET' && answer.status !== 200)).toEqual([]);
  expect(answers.filter((answer) => answer.ms >= ANSWER_WITHIN_MS)).toEqual([]);
  // The outages were felt: Temporal's and Postgres's as 503s, the worker's as 202s.
  expect(posts.some((answer) => answer.status === 503 && answer.errorPath === 'temporal')).toBe(true);
  expect(posts.some((answer) => answer.status === 503 && answer.errorPath === 'postgres')).toBe(true);
  expect(pending.length).toBeGreaterThan(0);

  // Every batch got through with all of its events: at once (200), or later (202, then completed).
  const complete = (batch: SentBatch) => ({ success: batch.eventIds.length, failed: 0, total: batch.eventIds.length, duplicates: 0 });
  expect(batches.filter((batch) => batch.status !== 200 && batch.status !== 202).map(({ key, status }) => ({ key, status }))).toEqual([]);
  for (const batch of batches.filter((b) => b.status === 200)) expect({ key: batch.key, summary: batch.summary }).toEqual({ key: batch.key, summary: complete(batch) });
  pending.forEach((batch, i) => {
    expect({ key: batch.key, status: records[i]?.status, summary: records[i]?.summary }).toEqual({ key: batch.key, status: 'completed', summary: complete(batch) });
  });

  // The table holds exactly the events sent, each once, in the batch its key was answered with.
  const stored = await api.db('usage_events').where({ organisation_id: tenant.organisationId }).select<{ event_id: string; batch_id: string }[]>('event_id', 'batch_id');
  const batchOfEvent = new Map(batches.flatMap((batch) => batch.eventIds.map((eventId) => [eventId, batch.batchId] as const)));
  const times = new Map<string, number>();
  for (const row of stored) times.set(row.event_id, (times.get(row.event_id) ?? 0) + 1);
  expect({
    missing: [...batchOfEvent.keys()].filter((eventId) => !times.has(eventId)),
    twice: [...times].filter(([, n]) => n > 1).map(([eventId]) => eventId),
    neverSent: [...times.keys()].filter((eventId) => !batchOfEvent.has(eventId)),
    inAnotherBatch: stored.filter((row) => batchOfEvent.has(row.event_id) && row.batch_id !== batchOfEvent.get(row.event_id)),
  }).toEqual({ missing: [], twice: [], neverSent: [], inAnotherBatch: [] });
  expect(stored).toHaveLength(batchOfEvent.size);

  // One batch per key, each completed: a retry never made a second one.
  const rows = await api.db('usage_batches').where({ organisation_id: tenant.organisationId }).select<{ id: string; idempotency_key: string; status: string }[]>('id', 'idempotency_key', 'status');
  expect(rows.map((row) => ({ key: row.idempotency_key, id: row.id, status: row.status })).sort((a, b) => a.key.localeCompare(b.key))).toEqual(
    batches.map((batch) => ({ key: batch.key, id: batch.batchId, status: 'completed' })).sort((a, b) => a.key.localeCompare(b.key)),
  );
});
