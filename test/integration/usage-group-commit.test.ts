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
    const perClient = 6;
    const answers = await Promise.all(
      Array.from({ length: clients }, async (_, client) => {
        const statuses: Array<{ status: number; summary: unknown; failed: number[] }> = [];
        for (let round = 0; round < perClient; round += 1) {
          const size = 50 + client * 10 + round;
          // Every tenth event names no customer the organisation has: each answer lists its own failures.
          const events = Array.from({ length: size }, (_, i) =>
            i % 10 === 3 ? usageEvent('ent_unknown', { eventId: `${prefix}-${client}-${round}-${i}` }) : usageEvent(entityId, { eventId: `${prefix}-${client}-${round}-${i}` }),
          );
          const res = await api.http().post('/events/batch').set(bearer(tenant.systemToken)).send({ events });
          const failures = Math.floor((size - 4) / 10) + 1;
          statuses.push({ status: res.status, summary: res.body.data?.summary, failed: (res.body.data?.failedRecords ?? []).map((record: { index: number }) => record.index) });
          expect({ status: res.status, summary: res.body.data?.summary }).toEqual({ status: 200, summary: { success: size - failures, failed: failures, total: size, duplicates: 0 } });
          expect(statuses.at(-1)!.failed).toEqual(Array.from({ length: size }, (_, i) => i).filter((i) => i % 10 === 3));
        }
        return statuses;
      }),
    );

    expect(answers.flat()).toHaveLength(clients * perClient);
    const expectedRows = Array.from({ length: clients }, (_, client) => Array.from({ length: perClient }, (_, round) => 50 + client * 10 + round).reduce((sum, size) => sum + size - (Math.floor((size - 4) / 10) + 1), 0)).reduce((a, b) => a + b, 0);
    const [stored] = await api.db('usage_events').where({ organisation_id: tenant.organisationId }).whereLike('event_id', `${prefix}-%`).count({ n: '*' });
    expect(Number(stored!.n)).toBe(expectedRows);
    // The runs that took them, of both shards: several each, the earlier ones continued as new.
    for (const workflowId of [`usage-ingestion:${tenant.organisationId}`, `usage-ingestion:${tenant.organisationId}:1`]) {
      const runs: string[] = [];
      for await (const execution of api.temporal.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(execution.status.name);
      expect({ workflowId, continued: runs.filter((status) => status === 'CONTINUED_AS_NEW').length >= 2, running: runs.filter((status) => status === 'RUNNING').length }).toEqual({ workflowId, continued: true, running: 1 });
    }
  });
});
