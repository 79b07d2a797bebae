import { randomUUID } from 'node:crypto';
import { addMonths, ensurePartition, maintainPartitions, monthOf, partitionName } from '../../src/modules/usage/event-partitions';
import { newId } from '../../src/db/ids';
import { retriedOnSqlState } from '../../src/db/errors';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createCustomerEntity, usageEvent } from './support/fixtures';
import { recordHistory } from './support/record-history';

/**
 * The event table's daily upkeep through its workflow on the suite's worker: retention deletes the months
 * past an organisation's window that are billed and paid, keeps the others with the reason, and the
 * deleted events' eventIds stay claimed. Months are counted back from the current one, so the test reads
 * the same whatever day it runs.
 */
let api: TestApi;
let tenant: Tenant;
let entityId: string;
let customerId: string;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'retention');
  ({ entityId, customerId } = await createCustomerEntity(api, tenant));
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const monthsBack = (offset: number) => addMonths(monthOf(new Date()), -offset);
const day = (month: Date, dayOfMonth: number) => new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), dayOfMonth)).toISOString().slice(0, 10);
const lastDay = (month: Date) => new Date(addMonths(month, 1).getTime() - 86_400_000).toISOString().slice(0, 10);
const key = (month: Date) => month.toISOString().slice(0, 7);

/** A contract billed monthly for one metered item since six months ago; `charged` lists the months billed, each on an invoice of the status given. */
async function seedContract(metric: string, charged: Array<{ monthsAgo: number; status: 'paid' | 'sent' }>, of: { tenant: Tenant; customerId: string } = { tenant, customerId }): Promise<void> {
  const { customerId } = of;
  const org = { organisation_id: of.tenant.organisationId };
  const suffix = randomUUID().slice(0, 8);
  await api.db('meters').insert({ ...org, id: `mtr_${suffix}`, name: 'Calls', metric, aggregation: 'sum' });
  await api.db('billing_plans').insert({ ...org, id: `pln_${suffix}`, name: 'Monthly', currency: 'USD', billing_period: 'monthly' });
  await api.db('billing_plan_items').insert({ ...org, id: `pli_${suffix}`, plan_id: `pln_${suffix}`, name: 'Calls', pricing_model: 'per_unit', unit_price: '0.5', meter_id: `mtr_${suffix}`, billing_timing: 'in_arrears' });
  const start = monthsBack(6);
  await api.db('contracts').insert({ ...org, id: `con_${suffix}`, customer_id: customerId, currency: 'USD', start_date: day(start, 1), status: 'active' });
  await api.db('contract_plans').insert({ ...org, id: `cpl_${suffix}`, contract_id: `con_${suffix}`, plan_id: `pln_${suffix}`, start_date: day(start, 1) });
  for (const { monthsAgo, status } of charged) {
    const month = monthsBack(monthsAgo);
    const invoiceId = `inv_${suffix}_${monthsAgo}`;
    await api.db('invoices').insert({ ...org, id: invoiceId, customer_id: customerId, contract_id: `con_${suffix}`, contract_plan_id: `cpl_${suffix}`, currency: 'USD', date: day(addMonths(month, 1), 1), from_date: day(month, 1), to_date: lastDay(month), status });
    await api.db('charges').insert({ ...org, id: `chg_${suffix}_${monthsAgo}`, contract_id: `con_${suffix}`, contract_plan_id: `cpl_${suffix}`, plan_item_id: `pli_${suffix}`, kind: 'usage', from_date: day(month, 1), to_date: lastDay(month), period_from: day(month, 1), period_to: lastDay(month), quantity: '10', amount: '5.00', invoice_id: invoiceId });
  }
}

it('when an organisation keeps two months of usage, then the daily upkeep deletes older months billed and paid, keeps the unpaid and the unbilled, and their eventIds stay claimed', async () => {
  const metric = `calls_${randomUUID().slice(0, 8)}`;
  // Six months ago billed and paid, five months ago billed and not paid, four paid, three not billed yet.
  await seedContract(metric, [
    { monthsAgo: 6, status: 'paid' },
    { monthsAgo: 5, status: 'sent' },
    { monthsAgo: 4, status: 'paid' },
  ]);
  const monthsAgo = [6, 5, 4, 3, 1];
  const events = monthsAgo.flatMap((offset) =>
    Array.from({ length: 10 }, (_, i) => usageEvent(entityId, { metric, eventId: `${metric}-${offset}-${i}`, timestamp: `${day(monthsBack(offset), 10)}T12:00:00Z` })),
  );
  // One event of year 500 stays in the default partition (no partition is named for its month): retention reaches it there.
  events.push(usageEvent(entityId, { metric, eventId: `${metric}-long-ago`, timestamp: '0500-06-10T12:00:00Z' }));
  const sent = await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
  expect(sent.body.data.summary).toEqual({ success: 51, failed: 0, total: 51, duplicates: 0 });

  await api.http().put('/organisation/settings').set(system()).send({ usageRetentionMonths: 0 }).expect(400);
  const settings = await api.http().put('/organisation/settings').set(system()).send({ usageRetentionMonths: 2 }).expect(200);
  expect(settings.body.data.usageRetentionMonths).toBe(2);

  const workflowId = `usage-event-storage-test-${randomUUID()}`;
  const result = await api.temporal.client.workflow.execute('usageEventStorageWorkflow', { taskQueue: api.temporal.taskQueue, workflowId, args: [] });
  await recordHistory(api, workflowId, 'usage-event-storage-retention');
  const mine = (result as { retention: Array<{ organisationId: string; deleted: unknown[]; held: unknown[] }> }).retention.find((outcome) => outcome.organisationId === tenant.organisationId);
  expect(mine).toEqual({
    organisationId: tenant.organisationId,
    deleted: [
      { month: '0500-06', events: 1 },
      { month: key(monthsBack(6)), events: 10 },
      { month: key(monthsBack(4)), events: 10 },
    ],
    held: [
      { month: key(monthsBack(5)), reason: 'unpaid-invoice' },
      { month: key(monthsBack(3)), reason: 'unbilled-usage' },
    ],
  });

  const left = await api.db('usage_events').where({ organisation_id: tenant.organisationId, metric }).select(api.db.raw(`to_char("timestamp" AT TIME ZONE 'UTC', 'YYYY-MM') AS month, count(*)::int AS count`)).groupBy(1).orderBy(1);
  expect(left).toEqual([5, 3, 1].map((offset) => ({ month: key(monthsBack(offset)), count: 10 })));

  // An event of a deleted month sent again is still a duplicate: its key outlives it.
  const again = await api.http().post('/events/batch').set(system()).send({ events: [events[0], events[20]] }).expect(200);
  expect(again.body.data.summary).toEqual({ success: 2, failed: 0, total: 2, duplicates: 2 });

  // A second run finds nothing more to delete.
  const rerun = await api.temporal.client.workflow.execute('usageEventStorageWorkflow', { taskQueue: api.temporal.taskQueue, workflowId: `usage-event-storage-test-${randomUUID()}`, args: [] });
  expect((rerun as { retention: Array<{ organisationId: string; deleted: unknown[] }> }).retention.find((outcome) => outcome.organisationId === tenant.organisationId)?.deleted).toEqual([]);
});

it('when the organisation is not on UTC, then a UTC month is held while an unpaid invoice covers any of its instants in the organisation\'s zone', async () => {
  const newYork = await createTenant(api, 'retention-new-york');
  const customer = await createCustomerEntity(api, newYork);
  await api.http().put('/organisation/settings').set(bearer(newYork.systemToken)).send({ timezone: 'America/New_York', usageRetentionMonths: 2 }).expect(200);
  const metric = `calls_${randomUUID().slice(0, 8)}`;
  // Five months ago billed and not paid; four and three months ago billed and paid.
  await seedContract(metric, [{ monthsAgo: 5, status: 'sent' }, { monthsAgo: 4, status: 'paid' }, { monthsAgo: 3, status: 'paid' }], { tenant: newYork, customerId: customer.customerId });
  // 02:00 UTC on the first of the month four months ago is the evening of the last day of the month before
  // in New York: usage of the unpaid invoice, in the UTC month of the paid one.
  const events = [
    usageEvent(customer.entityId, { metric, eventId: `${metric}-unpaid-evening`, timestamp: `${day(monthsBack(4), 1)}T02:00:00Z` }),
    usageEvent(customer.entityId, { metric, eventId: `${metric}-paid`, timestamp: `${day(monthsBack(3), 10)}T12:00:00Z` }),
    // The first month of the calendar, whose day before is in 1 BC.
    usageEvent(customer.entityId, { metric, eventId: `${metric}-year-1`, timestamp: '0001-01-15T12:00:00Z' }),
  ];
  const sent = await api.http().post('/events/batch').set(bearer(newYork.systemToken)).send({ events }).expect(200);
  expect(sent.body.data.summary).toEqual({ success: 3, failed: 0, total: 3, duplicates: 0 });

  const result = await api.temporal.client.workflow.execute('usageEventStorageWorkflow', { taskQueue: api.temporal.taskQueue, workflowId: `usage-event-storage-test-${randomUUID()}`, args: [] });
  const mine = (result as { retention: Array<{ organisationId: string }> }).retention.find((outcome) => outcome.organisationId === newYork.organisationId);
  expect(mine).toEqual({
    organisationId: newYork.organisationId,
    deleted: [
      { month: '0001-01', events: 1 },
      { month: key(monthsBack(3)), events: 1 },
    ],
    held: [{ month: key(monthsBack(4)), reason: 'unpaid-invoice' }],
  });
  const left = await api.db('usage_events').where({ organisation_id: newYork.organisationId, metric }).pluck('event_id');
  expect(left).toEqual([`${metric}-unpaid-evening`]);
});

/**
 * A partition step as the daily upkeep runs it: each of its locks is waited for a second at most, and a step
 * that gets none fails and is tried again by the next run. Other files of the suite write and read events
 * beside these tests, so a step refused a lock (55P03) is tried again here too, a few times.
 */
function retriedOnLockTimeout<T>(step: () => Promise<T>): Promise<T> {
  return retriedOnSqlState(['55P03'], step, { attempts: 5, pauseMs: () => 500 });
}

it('when events lie at the ends of the calendar, then the upkeep gives December 9999 its partition and leaves the year 1 in the default one', async () => {
  const metric = `edges_${randomUUID().slice(0, 8)}`;
  const events = [
    usageEvent(entityId, { metric, eventId: `${metric}-last`, timestamp: '9999-12-31T12:00:00Z' }),
    usageEvent(entityId, { metric, eventId: `${metric}-first`, timestamp: '0001-01-01T02:00:00Z' }),
  ];
  await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
  // The month whose end lies in the year 10000 is made like any other; a year of three digits has no
  // partition name and stays in the default partition.
  await retriedOnLockTimeout(() => maintainPartitions(api.db, new Date()));
  const where = async (eventId: string) =>
    (await api.db.raw<{ rows: Array<{ partition: string }> }>('SELECT tableoid::regclass::text AS partition FROM usage_events WHERE organisation_id = ? AND event_id = ?', [tenant.organisationId, eventId])).rows.map((row) => row.partition);
  expect(await where(`${metric}-last`)).toEqual(['usage_events_9999_12']);
  expect(await where(`${metric}-first`)).toEqual(['usage_events_default']);
});

it('when a write that began before a partition is made stores an event of its month, then the event lands, in the partition made', async () => {
  // A month far ahead that no partition covers yet, one per run of the test.
  const month = new Date(Date.UTC(2200 + Math.floor(Math.random() * 5000), Math.floor(Math.random() * 12), 1));
  const row = (timestamp: string) => ({
    id: newId('evt'),
    organisation_id: tenant.organisationId,
    customer_entity_id: entityId,
    metric: 'partition_race',
    value: '1',
    timestamp,
    metadata: {},
  });
  const writer = await api.db.transaction();
  let made: Promise<number | undefined> | undefined;
  try {
    // The write has begun: an event of the current month, through the table, holds its lock on it.
    await writer('usage_events').insert(row(new Date().toISOString()));
    made = retriedOnLockTimeout(() => ensurePartition(api.db, month));
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Then an event of the month being made: by the partitions this transaction saw, the default one.
    const late = row(new Date(month.getTime() + 86_400_000).toISOString());
    await writer('usage_events').insert(late);
    await writer.commit();
    expect(await made).toBe(1);
    const where = await api.db.raw<{ rows: Array<{ partition: string }> }>('SELECT tableoid::regclass::text AS partition FROM usage_events WHERE id = ?', [late.id]);
    expect(where.rows).toEqual([{ partition: partitionName(month) }]);
  } finally {
    if (!writer.isCompleted()) await writer.rollback();
    await made?.catch(() => undefined);
  }
});

it('when the worker has started, then the daily Schedule of the upkeep exists and starts its workflow at 00:30 UTC', async () => {
  const schedule = await api.temporal.client.schedule.getHandle('usage-event-storage').describe();
  expect(schedule.action).toMatchObject({ type: 'startWorkflow', workflowType: 'usageEventStorageWorkflow', workflowId: 'usage-event-storage' });
  expect(schedule.spec.calendars).toEqual([expect.objectContaining({ hour: [{ start: 0, end: 0, step: 1 }], minute: [{ start: 30, end: 30, step: 1 }] })]);
});
