import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createCustomerEntity, usageEvent } from './support/fixtures';
import { rollupsAgainstEvents } from './support/rollup-oracle';
import { queueWorkers } from './support/worker-process';
import { waitFor } from '../support/wait';

// A queue of its own, so that killing this worker leaves the suite's shared worker alone.
const taskQueue = `billing-fault-${randomUUID()}`;
const workerEnv = { TEMPORAL_TASK_QUEUE: taskQueue, WORKER_MAX_CONCURRENT_ACTIVITIES: '1' };
let api: TestApi;
let tenant: Tenant;
let entityId: string;
const workers = queueWorkers(taskQueue);
const startWorker = () => workers.start(workerEnv);


beforeAll(async () => {
  api = await startTestApi({ TEMPORAL_TASK_QUEUE: taskQueue });
  tenant = await createTenant(api, 'fault');
  ({ entityId } = await createCustomerEntity(api, tenant));
});
afterAll(async () => {
  for (const worker of workers.all) if (worker.exitCode === null) worker.kill('SIGKILL');
  await api.close();
});

it('when the worker is killed while a 10,000-event batch is in flight, then the request answers 202 with the batch, which completes with every event stored exactly once, in the meters\' rollups too', async () => {
  // Meters defined before the events: the chunks add to their rollups as they store the events.
  const meterIds: string[] = [];
  for (const meter of [
    { name: 'By region', aggregation: 'sum', groupBy: ['region'] },
    { name: 'Latest in eu', aggregation: 'latest', filters: [{ key: 'region', operator: 'in', values: ['eu'] }] },
  ]) {
    const created = await api.http().post('/meters').set(bearer(tenant.adminToken)).send({ metric: 'api_calls', ...meter });
    expect(created.status).toBe(201);
    meterIds.push(created.body.data.id);
  }
  const worker = await startWorker();
  const prefix = randomUUID();
  const events = Array.from({ length: 10_000 }, (_, i) =>
    usageEvent(entityId, { eventId: `${prefix}-${i}`, value: i, timestamp: new Date(Date.parse('2026-11-01T00:00:00Z') + (i % 2_000) * 97_000).toISOString(), ...(i % 5 === 0 ? {} : { metadata: { region: i % 3 === 0 ? 'us' : 'eu' } }) }),
  );
  const request = api.http().post('/events/batch').set(bearer(tenant.systemToken)).send({ events }).then((res) => res);

  // Kill it once the first chunk is written and before the last one is.
  const batchId = await waitFor(async () => {
    const row = await api.db('usage_batch_chunks').where({ organisation_id: tenant.organisationId }).whereNotNull('outcome').first('batch_id');
    return row?.batch_id as string | undefined;
  }, 60_000, 10);
  worker.kill('SIGKILL');
  const doneAtKill = Number((await api.db('usage_batch_chunks').where({ batch_id: batchId }).whereNotNull('outcome').count({ n: '*' }))[0]!.n);
  expect(doneAtKill).toBeLessThan(10);

  // The submit waits a few seconds for the outcome, then answers 202 with the batch, which goes on.
  const res = await request;
  expect(res.status).toBe(202);
  expect(res.body.data).toMatchObject({ id: batchId, status: 'processing', total: 10_000 });

  await startWorker();
  const batch = await waitFor(async () => {
    const read = await api.http().get(`/events/batches/${batchId}`).set(bearer(tenant.systemToken));
    return read.body.data.status === 'completed' ? read.body.data : undefined;
  }, 120_000);
  expect(batch.summary).toEqual({ success: 10_000, failed: 0, total: 10_000, duplicates: 0 });
  const stored = await api.db('usage_events').where({ organisation_id: tenant.organisationId }).whereLike('event_id', `${prefix}-%`).count({ n: '*', distinct: 'event_id' });
  expect(Number(stored[0]!.n)).toBe(10_000);
  const rows = Number((await api.db('usage_events').where({ batch_id: batchId }).count({ n: '*' }))[0]!.n);
  expect(rows).toBe(10_000);
  // The rollups hold every stored event once: what the killed chunk added went with its transaction.
  for (const meterId of meterIds) {
    const { stored: rollups, expected } = await rollupsAgainstEvents(api.db, meterId);
    expect(rollups.length).toBeGreaterThan(100);
    expect(rollups).toEqual(expected);
  }

  // Sending the same body again stores nothing new.
  const retry = await api.http().post('/events/batch').set(bearer(tenant.systemToken)).send({ events });
  expect(retry.body.data.summary).toEqual({ success: 10_000, failed: 0, total: 10_000, duplicates: 10_000 });
  for (const meterId of meterIds) {
    const { stored: rollups, expected } = await rollupsAgainstEvents(api.db, meterId);
    expect(rollups).toEqual(expected);
  }
});
