import { randomUUID } from 'node:crypto';
import { bearer, createTenant, type Tenant, type TestApi } from './support/harness';
import { createCustomerEntity, usageEvent } from './support/fixtures';
import { startBreakableStack, type BreakableStack } from './support/breakable-stack';

jest.setTimeout(300_000);

let stack: BreakableStack;
let api: TestApi;
let tenant: Tenant;
let entityId: string;

// A Temporal server that suggests continue-as-new once a history passes 60 events, and an API that spreads
// each organisation's batches over two ingestion workflows: each drains and continues as new every few
// batches, while batches keep coming.
beforeAll(async () => {
  stack = await startBreakableStack('group-commit', {}, { 'limit.historyCount.suggestContinueAsNew': 60 }, { USAGE_INGESTION_SHARDS: '2' });
  api = stack.api;
  tenant = await createTenant(api, 'group-commit');
  ({ entityId } = await createCustomerEntity(api, tenant));
});

afterAll(() => stack?.close());

describe('POST /events/batch through group commit', () => {
  it('when 8 clients post batches while the ingestion workflows continue as new again and again, then every request answers 200 with its own outcomes and every event is stored once', async () => {
    const prefix = randomUUID();
    const clients = 8;
    const shards = [`usage-ingestion:${tenant.organisationId}`, `usage-ingestion:${tenant.organisationId}:1`];
    const runsOf = async (workflowId: string) => {
      const runs: string[] = [];
      for await (const execution of api.temporal.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(execution.status.name);
      return { workflowId, continued: runs.filter((status) => status === 'CONTINUED_AS_NEW').length, running: runs.filter((status) => status === 'RUNNING').length };
    };
    // Batch ids are random, so how batches fall on the two shards, and how many each run groups, varies with
    // the load: each client keeps posting (6 batches at least, 40 at most) until both shards have continued as
    // new at least twice.
    let expectedRows = 0;
    let done = false;
    const clientsDone = Array.from({ length: clients }, async (_, client) => {
      for (let round = 0; round < 40 && (round < 6 || !done); round += 1) {
        const size = 50 + client * 10 + (round % 10);
        // Every tenth event names no customer the organisation has: each answer lists its own failures.
        const events = Array.from({ length: size }, (_, i) =>
          i % 10 === 3 ? usageEvent('ent_unknown', { eventId: `${prefix}-${client}-${round}-${i}` }) : usageEvent(entityId, { eventId: `${prefix}-${client}-${round}-${i}` }),
        );
        const res = await api.http().post('/events/batch').set(bearer(tenant.systemToken)).send({ events });
        const failures = Math.floor((size - 4) / 10) + 1;
        expectedRows += size - failures;
        expect({ status: res.status, summary: res.body.data?.summary }).toEqual({ status: 200, summary: { success: size - failures, failed: failures, total: size, duplicates: 0 } });
        expect((res.body.data?.failedRecords ?? []).map((record: { index: number }) => record.index)).toEqual(Array.from({ length: size }, (_, i) => i).filter((i) => i % 10 === 3));
      }
    });
    const watching = (async () => {
      while (!done) {
        done = (await Promise.all(shards.map(runsOf))).every((shard) => shard.continued >= 2);
        if (!done) await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
    await Promise.all(clientsDone).finally(() => (done = true));
    await watching;

    const [stored] = await api.db('usage_events').where({ organisation_id: tenant.organisationId }).whereLike('event_id', `${prefix}-%`).count({ n: '*' });
    expect(Number(stored!.n)).toBe(expectedRows);
    // The runs that took them, of both shards: several each, the earlier ones continued as new, one running.
    for (const shard of await Promise.all(shards.map(runsOf))) expect({ ...shard, continued: shard.continued >= 2 }).toEqual({ workflowId: shard.workflowId, continued: true, running: 1 });
  });

  it('when 40 clients post a batch each at once, more than the 10 Updates a workflow takes by the server default, then every request answers 200 with its outcome', async () => {
    const prefix = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, client) => api.http().post('/events/batch').set(bearer(tenant.systemToken)).send({ events: [usageEvent(entityId, { eventId: `${prefix}-${client}` })] })),
    );
    expect(answers.map((res) => [res.status, res.body.data?.summary?.success])).toEqual(answers.map(() => [200, 1]));
    const [stored] = await api.db('usage_events').where({ organisation_id: tenant.organisationId }).whereLike('event_id', `${prefix}-%`).count({ n: '*' });
    expect(Number(stored!.n)).toBe(40);
  });
});
