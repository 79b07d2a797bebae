import { ScheduleNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import type { TypedSearchAttributes } from '@temporalio/common';
import { freePort } from '../../src/temporal/dev-server';
import { invoiceRunScheduleId } from '../../workflows/shared';
import { OrganisationIdKey } from '../../workflows/search-attributes';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

const admin = () => bearer(tenant.adminToken);
const MONTHLY = { name: 'Monthly', cron: '0 6 1 * *', timezone: 'Europe/Berlin' };

async function createSchedule(body: Record<string, unknown> = MONTHLY): Promise<string> {
  const res = await api.http().post('/invoice-run-schedules').set(admin()).send(body);
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

const handleOf = (id: string, organisationId = tenant.organisationId) => api.temporal.client.schedule.getHandle(invoiceRunScheduleId(organisationId, id));
const describeSchedule = (id: string) => handleOf(id).describe();

/** Ends a run a Schedule started, whether or not a worker runs invoice runs yet. */
async function terminate(workflowId: string): Promise<void> {
  await api.temporal.client.workflow
    .getHandle(workflowId)
    .terminate('invoice-run schedule test')
    .catch((error: unknown) => {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    });
}

/** Day, hour and minute of an instant as read in a zone. */
function wallClockIn(zone: string, iso: string) {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone: zone, day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(new Date(iso));
  const part = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return { day: part('day'), hour: part('hour'), minute: part('minute') };
}

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'schedules');
  other = await createTenant(api, 'schedules-other');
});
afterAll(() => api.close());

describe('creating a schedule', () => {
  it('when finance schedules monthly billing with cron, then a Temporal Schedule bills the organisation at 06:00 Berlin time on the 1st, skipping overlaps', async () => {
    const res = await api.http().post('/invoice-run-schedules').set(admin()).send(MONTHLY);
    expect(res.status).toBe(201);
    const schedule = res.body.data;
    expect(schedule).toMatchObject({ name: 'Monthly', cron: '0 6 1 * *', calendar: null, timezone: 'Europe/Berlin', paused: false, createdBy: tenant.adminUserId });
    expect(schedule.temporalScheduleId).toBe(invoiceRunScheduleId(tenant.organisationId, schedule.id));

    const description = await describeSchedule(schedule.id);
    expect(description.spec.timezone).toBe('Europe/Berlin');
    expect(description.spec.calendars).toHaveLength(1);
    expect(description.spec.calendars![0]).toMatchObject({
      minute: [{ start: 0, end: 0, step: 1 }],
      hour: [{ start: 6, end: 6, step: 1 }],
      dayOfMonth: [{ start: 1, end: 1, step: 1 }],
      month: [{ start: 'JANUARY', end: 'DECEMBER', step: 1 }],
    });
    expect(description.policies).toMatchObject({ overlap: 'SKIP', catchupWindow: 24 * 60 * 60 * 1000 });
    expect(description.state.paused).toBe(false);
    expect(description.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'invoiceRunWorkflow',
      taskQueue: api.config.TEMPORAL_TASK_QUEUE,
      workflowId: `invoice-run:${schedule.id}`,
      args: [{ organisationId: tenant.organisationId, timezone: 'Europe/Berlin', scheduleId: schedule.id }],
    });
    // A described action's attributes are always the typed collection; the type also allows the pairs a start takes.
    expect((description.action.typedSearchAttributes as TypedSearchAttributes).get(OrganisationIdKey)).toBe(tenant.organisationId);
    expect(description.typedSearchAttributes?.get(OrganisationIdKey)).toBe(tenant.organisationId);

    const detail = (await api.http().get(`/invoice-run-schedules/${schedule.id}`).set(admin()).expect(200)).body.data;
    expect(detail).toMatchObject({ ...schedule, temporal: { paused: false, recentActions: [], runningWorkflowIds: [], actionsTaken: 0 } });
    expect(detail.temporal.nextActionTimes.length).toBeGreaterThan(2);
    for (const time of detail.temporal.nextActionTimes) expect(wallClockIn('Europe/Berlin', time)).toEqual({ day: 1, hour: 6, minute: 0 });
  });

  it('when a calendar is given instead, paused, then the Schedule runs in those months only and starts paused', async () => {
    const id = await createSchedule({ name: 'Quarterly', calendar: { minute: 30, hour: 2, dayOfMonth: 5, month: [10, 1, 4, 7, 4] }, timezone: 'America/New_York', paused: true });

    const description = await describeSchedule(id);
    expect(description.spec.timezone).toBe('America/New_York');
    expect(description.spec.calendars![0]).toMatchObject({
      minute: [{ start: 30, end: 30, step: 1 }],
      hour: [{ start: 2, end: 2, step: 1 }],
      dayOfMonth: [{ start: 5, end: 5, step: 1 }],
      month: ['JANUARY', 'APRIL', 'JULY', 'OCTOBER'].map((month) => ({ start: month, end: month, step: 1 })),
    });
    expect(description.state.paused).toBe(true);
    const detail = (await api.http().get(`/invoice-run-schedules/${id}`).set(admin()).expect(200)).body.data;
    expect(detail).toMatchObject({ cron: null, calendar: { minute: 30, hour: 2, dayOfMonth: 5, month: [1, 4, 7, 10] }, paused: true, temporal: { paused: true } });
  });

  it.each([
    ['a cron expression with four fields', { ...MONTHLY, cron: '0 6 1 *' }, 'body.cron'],
    ['a minute out of range', { ...MONTHLY, cron: '60 6 1 * *' }, 'body.cron'],
    ['a range that ends before it starts', { ...MONTHLY, cron: '0 6 1 5-3 *' }, 'body.cron'],
    ['a zero step', { ...MONTHLY, cron: '*/0 6 1 * *' }, 'body.cron'],
    ['a zone that does not exist', { ...MONTHLY, timezone: 'Europe/Atlantis' }, 'body.timezone'],
    ['an offset instead of a zone', { ...MONTHLY, timezone: '+02:00' }, 'body.timezone'],
    ['both cron and calendar', { ...MONTHLY, calendar: { minute: 0, hour: 6, dayOfMonth: 1 } }, 'body'],
    ['neither cron nor calendar', { name: 'Monthly', timezone: 'UTC' }, 'body'],
    ['a calendar day 32', { name: 'Monthly', timezone: 'UTC', calendar: { minute: 0, hour: 6, dayOfMonth: 32 } }, 'body.calendar.dayOfMonth'],
    ['a cron of 31 February, which never comes', { ...MONTHLY, cron: '0 6 31 2 *' }, 'body.cron'],
    ['a cron of the 31st in months of 30 days', { ...MONTHLY, cron: '0 6 31 4,6,9,11 *' }, 'body.cron'],
    ['a calendar of 30 February', { name: 'Monthly', timezone: 'UTC', calendar: { minute: 0, hour: 6, dayOfMonth: 30, month: [2] } }, 'body.calendar.dayOfMonth'],
  ])('when the body has %s, then 400 at that field and no schedule is made', async (_case, body, path) => {
    const before = (await api.http().get('/invoice-run-schedules').set(admin()).expect(200)).body.data.total;
    const res = await api.http().post('/invoice-run-schedules').set(admin()).send(body);
    expect(res.status).toBe(400);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ code: 1001, path }));
    expect((await api.http().get('/invoice-run-schedules').set(admin()).expect(200)).body.data.total).toBe(before);
  });

  it('when Temporal cannot be reached, then 503 and no schedule row is left behind', async () => {
    const unreachable = await startTestApi({ TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`, TEMPORAL_CALL_TIMEOUT_MS: '1000' });
    try {
      const name = `unreachable-${Date.now()}`;
      const res = await unreachable.http().post('/invoice-run-schedules').set(admin()).send({ ...MONTHLY, name });
      expect(res.status).toBe(503);
      expect(res.body.errors[0]).toMatchObject({ code: 1006, path: 'temporal' });
      expect(await api.db('invoice_run_schedules').where({ organisation_id: tenant.organisationId, name })).toEqual([]);
    } finally {
      await unreachable.close();
    }
  });
});

describe('listing', () => {
  it("when an organisation lists its schedules, then it pages them from Postgres, newest first, and never sees another organisation's", async () => {
    const mine = [await createSchedule({ ...MONTHLY, name: 'list-a' }), await createSchedule({ ...MONTHLY, name: 'list-b' })];
    const theirs = (await api.http().post('/invoice-run-schedules').set(bearer(other.adminToken)).send(MONTHLY).expect(201)).body.data.id;

    const page = (await api.http().get('/invoice-run-schedules').query({ limit: 1, search: 'list-' }).set(admin()).expect(200)).body.data;
    expect(page).toMatchObject({ page: 1, limit: 1, total: 2 });
    expect(page.items.map((item: { id: string }) => item.id)).toEqual([mine[1]]);
    const all = (await api.http().get('/invoice-run-schedules').query({ limit: 100 }).set(admin()).expect(200)).body.data.items.map((item: { id: string }) => item.id);
    expect(all).toEqual(expect.arrayContaining(mine));
    expect(all).not.toContain(theirs);
  });
});

describe('running', () => {
  it('when a schedule is triggered, then an invoice run for the organisation starts now, under the id the answer names', async () => {
    const id = await createSchedule();
    const triggered = await api.http().post(`/invoice-run-schedules/${id}/trigger`).set(admin()).send({}).expect(201);
    const runId = triggered.body.data.id as string;
    expect(triggered.body.data).toMatchObject({ scheduleId: id, dryRun: false });

    const workflowId = `invoice-run:${runId}`;
    const run = await api.temporal.client.workflow.getHandle(workflowId).describe();
    expect(run.type).toBe('invoiceRunWorkflow');
    expect(run.taskQueue).toBe(api.config.TEMPORAL_TASK_QUEUE);
    expect(run.typedSearchAttributes.get(OrganisationIdKey)).toBe(tenant.organisationId);
    await terminate(workflowId);
  });

  it('when missed dates are backfilled, then each date of the range runs once, oldest first, at its time in the zone', async () => {
    const id = await createSchedule();
    await api.http().post(`/invoice-run-schedules/${id}/backfill`).set(admin()).send({ from: '2026-01-01', to: '2026-03-01' }).expect(200);

    // BUFFER_ALL starts the next date when the run before it ends: end each run as it appears.
    const deadline = Date.now() + 60_000;
    let description = await describeSchedule(id);
    while (description.info.recentActions.length < 3 || description.info.runningActions.length > 0) {
      if (Date.now() > deadline) throw new Error(`backfill did not take its three dates: ${JSON.stringify(description.info)}`);
      for (const running of description.info.runningActions) await terminate(running.workflow.workflowId);
      await new Promise((resolve) => setTimeout(resolve, 250));
      description = await describeSchedule(id);
    }
    expect(description.info.recentActions.map((action) => action.scheduledAt.toISOString())).toEqual([
      '2026-01-01T05:00:00.000Z',
      '2026-02-01T05:00:00.000Z',
      '2026-03-01T05:00:00.000Z',
    ]);
  });

  it("when a date is given, then it is a day in the schedule's zone: Berlin's 1 March starts at 23:00 UTC the day before", async () => {
    const id = await createSchedule();
    await api.http().post(`/invoice-run-schedules/${id}/backfill`).set(admin()).send({ from: '2026-03-01', to: '2026-02-28T23:30:00Z' }).expect(200);
  });

  it.each([
    ['to before from', { from: '2026-03-01', to: '2026-02-28' }],
    ["a date-time to before the zone's midnight that starts the date from", { from: '2026-03-01', to: '2026-02-28T22:30:00Z' }],
    ['more than 366 days', { from: '2025-01-01', to: '2026-01-02' }],
  ])('when a backfill has %s, then 400 at body.to', async (_case, body) => {
    const id = await createSchedule();
    const res = await api.http().post(`/invoice-run-schedules/${id}/backfill`).set(admin()).send(body);
    expect(res.status).toBe(400);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ code: 1001, path: 'body.to' }));
  });
});

describe('changing a schedule', () => {
  it('when it is paused and unpaused, then the Temporal Schedule follows', async () => {
    const id = await createSchedule();
    const paused = await api.http().post(`/invoice-run-schedules/${id}/pause`).set(admin()).send({}).expect(200);
    expect(paused.body.data.paused).toBe(true);
    expect((await describeSchedule(id)).state.paused).toBe(true);

    const unpaused = await api.http().post(`/invoice-run-schedules/${id}/unpause`).set(admin()).send({}).expect(200);
    expect(unpaused.body.data.paused).toBe(false);
    expect((await describeSchedule(id)).state.paused).toBe(false);
  });

  it('when the cron, zone or name change, then the Schedule gets the new spec; a calendar then replaces the cron', async () => {
    const id = await createSchedule();
    const changed = await api.http().put(`/invoice-run-schedules/${id}`).set(admin()).send({ cron: '15 7 2 * *', timezone: 'Asia/Tokyo' }).expect(200);
    expect(changed.body.data).toMatchObject({ name: 'Monthly', cron: '15 7 2 * *', timezone: 'Asia/Tokyo' });
    let description = await describeSchedule(id);
    expect(description.spec.timezone).toBe('Asia/Tokyo');
    expect(description.spec.calendars![0]).toMatchObject({ minute: [{ start: 15, end: 15 }], hour: [{ start: 7, end: 7 }], dayOfMonth: [{ start: 2, end: 2 }] });
    expect(description.action.args).toEqual([{ organisationId: tenant.organisationId, timezone: 'Asia/Tokyo', scheduleId: id }]);

    const renamed = await api.http().put(`/invoice-run-schedules/${id}`).set(admin()).send({ name: 'Renamed' }).expect(200);
    expect(renamed.body.data).toMatchObject({ name: 'Renamed', cron: '15 7 2 * *' });

    const calendar = { minute: 0, hour: 3, dayOfMonth: 10 };
    const replaced = await api.http().put(`/invoice-run-schedules/${id}`).set(admin()).send({ calendar, paused: true }).expect(200);
    expect(replaced.body.data).toMatchObject({ cron: null, calendar, paused: true });
    description = await describeSchedule(id);
    expect(description.spec.calendars).toHaveLength(1);
    expect(description.spec.calendars![0]).toMatchObject({ hour: [{ start: 3, end: 3 }], dayOfMonth: [{ start: 10, end: 10 }] });
    expect(description.state.paused).toBe(true);
  });

  it.each([
    ['a bad cron', { cron: '0 25 * * *' }, 'body.cron'],
    ['a bad zone', { timezone: 'Mars/Olympus_Mons' }, 'body.timezone'],
    ['both cron and calendar', { cron: '0 6 1 * *', calendar: { minute: 0, hour: 6, dayOfMonth: 1 } }, 'body'],
    ['nothing to change', {}, 'body'],
  ])('when a change has %s, then 400 and the schedule is untouched', async (_case, body, path) => {
    const id = await createSchedule();
    const res = await api.http().put(`/invoice-run-schedules/${id}`).set(admin()).send(body);
    expect(res.status).toBe(400);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ code: 1001, path }));
    expect((await describeSchedule(id)).spec.calendars![0]).toMatchObject({ hour: [{ start: 6, end: 6 }] });
  });

  it('when Temporal cannot take a change, then 503 and the row keeps what it had', async () => {
    const id = await createSchedule();
    const unreachable = await startTestApi({ TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`, TEMPORAL_CALL_TIMEOUT_MS: '1000' });
    try {
      const res = await unreachable.http().put(`/invoice-run-schedules/${id}`).set(admin()).send({ cron: '0 9 15 * *', paused: true });
      expect(res.status).toBe(503);
    } finally {
      await unreachable.close();
    }
    const row = (await api.http().get(`/invoice-run-schedules/${id}`).set(admin()).expect(200)).body.data;
    expect(row).toMatchObject({ cron: '0 6 1 * *', paused: false, temporal: { paused: false } });
  });
});

describe('Postgres is the source of truth', () => {
  it('when the Temporal Schedule was deleted behind the API, then reading the schedule rebuilds it from the row', async () => {
    const id = await createSchedule({ ...MONTHLY, paused: true });
    await handleOf(id).delete();
    await expect(describeSchedule(id)).rejects.toBeInstanceOf(ScheduleNotFoundError);

    const detail = (await api.http().get(`/invoice-run-schedules/${id}`).set(admin()).expect(200)).body.data;
    expect(detail.temporal.paused).toBe(true);
    const description = await describeSchedule(id);
    expect(description.action.args).toEqual([{ organisationId: tenant.organisationId, timezone: 'Europe/Berlin', scheduleId: id }]);
    expect(description.spec.calendars![0]).toMatchObject({ hour: [{ start: 6, end: 6 }], dayOfMonth: [{ start: 1, end: 1 }] });
  });

  it('when the Temporal Schedule was deleted behind the API, then the next change recreates it with the change', async () => {
    const id = await createSchedule();
    await handleOf(id).delete();

    await api.http().post(`/invoice-run-schedules/${id}/pause`).set(admin()).send({}).expect(200);
    expect((await describeSchedule(id)).state.paused).toBe(true);
  });
});

describe('a Temporal Schedule without its row', () => {
  it('when it starts a run, then the run bills nothing, fails saying why, and the Schedule is deleted', async () => {
    // What a create leaves when Temporal took the Schedule after the API had answered 503 and dropped the row.
    const id = await createSchedule();
    await api.db('invoice_run_schedules').where({ organisation_id: tenant.organisationId, id }).delete();
    await handleOf(id).trigger();

    const deadline = Date.now() + 30_000;
    let workflowId: string | undefined;
    while (workflowId === undefined) {
      if (Date.now() > deadline) throw new Error('the Schedule started no run');
      for await (const execution of api.temporal.client.workflow.list({ query: `WorkflowType = 'invoiceRunWorkflow' AND WorkflowId STARTS_WITH 'invoice-run:${id}'` })) workflowId = execution.workflowId;
      if (workflowId === undefined) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const failure = await api.temporal.client.workflow.getHandle(workflowId).result().then(
      () => undefined,
      // The workflow's failure is its activity's, whose cause is the activity's own error.
      (error: unknown) => (error as { cause?: { cause?: { message?: string; nonRetryable?: boolean } } }).cause?.cause,
    );
    expect(failure?.message).toContain(`Invoice run schedule ${id} no longer exists`);
    expect(failure?.nonRetryable).toBe(true);
    await expect(describeSchedule(id)).rejects.toBeInstanceOf(ScheduleNotFoundError);
    expect(await api.db('invoice_runs').where({ organisation_id: tenant.organisationId, schedule_id: id })).toEqual([]);
  });
});

describe('deleting', () => {
  it('when a schedule is deleted, then its Temporal Schedule and its row are gone', async () => {
    const id = await createSchedule();
    const res = await api.http().delete(`/invoice-run-schedules/${id}`).set(admin()).expect(200);
    expect(res.body.data).toEqual({ id, deleted: true });
    await expect(describeSchedule(id)).rejects.toBeInstanceOf(ScheduleNotFoundError);
    await api.http().get(`/invoice-run-schedules/${id}`).set(admin()).expect(404);
  });

  it('when its Temporal Schedule is already gone, then the delete still removes the row', async () => {
    const id = await createSchedule();
    await handleOf(id).delete();
    await api.http().delete(`/invoice-run-schedules/${id}`).set(admin()).expect(200);
    await api.http().get(`/invoice-run-schedules/${id}`).set(admin()).expect(404);
  });
});

describe('who may manage schedules', () => {
  const ROUTES: Array<[method: 'get' | 'post' | 'put' | 'delete', path: (id: string) => string, body?: object]> = [
    ['post', () => '/invoice-run-schedules', MONTHLY],
    ['get', () => '/invoice-run-schedules'],
    ['get', (id) => `/invoice-run-schedules/${id}`],
    ['put', (id) => `/invoice-run-schedules/${id}`, { name: 'changed' }],
    ['delete', (id) => `/invoice-run-schedules/${id}`],
    ['post', (id) => `/invoice-run-schedules/${id}/pause`, {}],
    ['post', (id) => `/invoice-run-schedules/${id}/unpause`, {}],
    ['post', (id) => `/invoice-run-schedules/${id}/trigger`, {}],
    ['post', (id) => `/invoice-run-schedules/${id}/backfill`, { from: '2026-01-01', to: '2026-01-02' }],
  ];

  function call(method: 'get' | 'post' | 'put' | 'delete', path: string, token: string, body?: object) {
    const request = api.http()[method](path).set(bearer(token));
    return body ? request.send(body) : request;
  }

  it('when a SystemUser calls any schedule route, then 403 with the exact envelope and the schedule is untouched', async () => {
    const id = await createSchedule();
    for (const [method, path, body] of ROUTES) {
      const res = await call(method, path(id), tenant.systemToken, body);
      expect([`${method} ${path(id)}`, res.status, res.body]).toEqual([`${method} ${path(id)}`, 403, { status: 'error', message: 'Forbidden', errors: [] }]);
    }
    const description = await describeSchedule(id);
    expect(description.state.paused).toBe(false);
    expect(description.info.recentActions).toEqual([]);
  });

  it("when an Admin names another organisation's schedule, then 404 on every route and that schedule is untouched", async () => {
    const theirs = (await api.http().post('/invoice-run-schedules').set(bearer(other.adminToken)).send(MONTHLY).expect(201)).body.data.id as string;
    for (const [method, path, body] of ROUTES.filter(([, path]) => path('x') !== '/invoice-run-schedules')) {
      const res = await call(method, path(theirs), tenant.adminToken, body);
      expect([`${method} ${path(theirs)}`, res.status]).toEqual([`${method} ${path(theirs)}`, 404]);
      expect(res.body.errors[0]).toMatchObject({ code: 1002 });
    }
    const description = await handleOf(theirs, other.organisationId).describe();
    expect(description.state.paused).toBe(false);
    expect(description.info.recentActions).toEqual([]);
    expect((await api.http().get(`/invoice-run-schedules/${theirs}`).set(bearer(other.adminToken)).expect(200)).body.data.name).toBe('Monthly');
  });
});
