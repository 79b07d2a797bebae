import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody, invoicesOfRun } from './support/billing-fixtures';
import { createCustomerEntity, usageEvent } from './support/fixtures';
import { eventually, startWebhookReceiver } from './support/webhook-receiver';

const ROOT = path.resolve(__dirname, '../..');

let api: TestApi;
let tenant: Tenant;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'small-things');
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver.close();
  await api.close();
});

const system = (owner = tenant) => bearer(owner.systemToken);
const admin = (owner = tenant) => bearer(owner.adminToken);

/** A customer with an active contract on a monthly plan of a flat 100 (see createBillingFixture). */
async function activeFixture(owner: Tenant, currency = 'USD') {
  const fixture = await createBillingFixture(api, owner, currency);
  await api.http().post(`/contracts/${fixture.contractId}/activate`).set(system(owner)).send({}).expect(200);
  return fixture;
}

/** The `data` schema of an operation's success answer in the served OpenAPI document, references followed. */
async function documentedData(pathName: string, method: string, status: string): Promise<{ properties: Record<string, unknown>; required?: string[] }> {
  const document = (await api.http().get('/openapi.json').expect(200)).body;
  const resolve = (schema: { $ref?: string } & Record<string, unknown>): Record<string, unknown> =>
    schema.$ref ? resolve(document.components.schemas[schema.$ref.split('/').pop()!]) : schema;
  const envelope = resolve(document.paths[pathName][method].responses[status].content['application/json'].schema);
  return resolve((envelope.properties as Record<string, { $ref?: string } & Record<string, unknown>>).data!) as { properties: Record<string, unknown>; required?: string[] };
}

describe('1. a usage batch lists its duplicates by index and eventId', () => {
  let entityId: string;
  beforeAll(async () => {
    ({ entityId } = await createCustomerEntity(api, tenant));
  });

  it('when a batch repeats an eventId inside itself and one already stored, then the answer lists each duplicate with its index and eventId beside the count, and the batch read-back lists the same', async () => {
    const prefix = randomUUID();
    await api.http().post('/events/batch').set(system()).send({ events: [usageEvent(entityId, { eventId: `${prefix}-earlier` })] }).expect(200);

    const events = [
      usageEvent(entityId, { eventId: `${prefix}-a` }),
      usageEvent(entityId, { eventId: `${prefix}-a`, value: 2 }),
      { CustomerEntityId: entityId, value: 1, timestamp: '2026-11-01T10:00:00Z' },
      usageEvent(entityId, { eventId: `${prefix}-earlier` }),
      usageEvent(entityId),
      usageEvent(entityId, { eventId: `${prefix}-b` }),
    ];
    const res = await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
    expect(res.body.data.summary).toEqual({ success: 5, failed: 1, total: 6, duplicates: 2 });
    expect(res.body.data.duplicateEvents).toEqual([
      { index: 1, eventId: `${prefix}-a` },
      { index: 3, eventId: `${prefix}-earlier` },
    ]);
    expect(res.body.data.failedRecords.map((record: { index: number }) => record.index)).toEqual([2]);

    const batch = await api.http().get(`/events/batches/${res.body.data.batchId}`).set(system()).expect(200);
    expect(batch.body.data).toMatchObject({ status: 'completed', summary: res.body.data.summary, duplicateEvents: res.body.data.duplicateEvents });
    // Stored in Postgres with the chunk's outcome, not only in the workflow's result.
    const [chunk] = await api.db('usage_batch_chunks').where({ batch_id: res.body.data.batchId }).select('outcome');
    expect(chunk.outcome.duplicateEvents).toEqual(res.body.data.duplicateEvents);
  });

  it('when the same events come again through POST /usage/bulk, then every one with an eventId is listed as a duplicate, by its index', async () => {
    const prefix = randomUUID();
    const events = [usageEvent(entityId, { eventId: `${prefix}-1` }), usageEvent(entityId), usageEvent(entityId, { eventId: `${prefix}-2` })];
    const first = await api.http().post('/usage/bulk').set(system()).send({ events }).expect(200);
    expect(first.body.data.duplicateEvents).toEqual([]);
    const again = await api.http().post('/usage/bulk').set(system()).send({ events }).expect(200);
    expect(again.body.data.summary).toEqual({ success: 3, failed: 0, total: 3, duplicates: 2 });
    expect(again.body.data.duplicateEvents).toEqual([
      { index: 0, eventId: `${prefix}-1` },
      { index: 2, eventId: `${prefix}-2` },
    ]);
  });

  it('when an eventId repeats across two chunks of one batch, then one of the two is stored and the other is listed, by its index in the whole batch', async () => {
    const prefix = randomUUID();
    const events = Array.from({ length: 1001 }, (_, index) => usageEvent(entityId, { eventId: `${prefix}-${index}` }));
    events[1000] = usageEvent(entityId, { eventId: `${prefix}-0` });
    const res = await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
    expect(res.body.data.summary).toEqual({ success: 1001, failed: 0, total: 1001, duplicates: 1 });
    // The chunks run side by side: whichever commits first stores the event.
    expect([[{ index: 0, eventId: `${prefix}-0` }], [{ index: 1000, eventId: `${prefix}-0` }]]).toContainEqual(res.body.data.duplicateEvents);
  });

  it('when the OpenAPI document is read, then the batch answer and the batch read-back document duplicateEvents', async () => {
    for (const [pathName, method] of [['/events/batch', 'post'], ['/usage/bulk', 'post'], ['/events/batches/{id}', 'get']] as const) {
      const data = await documentedData(pathName, method, '200');
      expect([pathName, Object.keys(data.properties)]).toEqual([pathName, expect.arrayContaining(['summary', 'failedRecords', 'duplicateEvents'])]);
    }
  });
});

describe('2. triggering a schedule answers the run it started', () => {
  const todayIn = (zone: string) => new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());

  async function finished(runId: string, owner: Tenant): Promise<Record<string, unknown>> {
    return eventually(async () => {
      const read = await api.http().get(`/invoice-runs/${runId}`).set(system(owner)).expect(200);
      return read.body.data.status === 'running' ? undefined : (read.body.data as Record<string, unknown>);
    });
  }

  it('when a schedule is triggered, then the answer is the run (201): its id, the schedule, the billing date of today in the schedule zone, and its status, which GET /invoice-runs/{id} follows to the invoices it made', async () => {
    const owner = await createTenant(api, 'small-things-trigger');
    const fixture = await activeFixture(owner);
    const schedule = await api.http().post('/invoice-run-schedules').set(admin(owner)).send({ name: 'Monthly', cron: '0 6 1 * *', timezone: 'Pacific/Kiritimati' }).expect(201);
    const scheduleId = schedule.body.data.id as string;

    // Kiritimati's day turns at 10:00 UTC: the day read before and after the trigger bound its billing date.
    const dayBefore = todayIn('Pacific/Kiritimati');
    const triggered = await api.http().post(`/invoice-run-schedules/${scheduleId}/trigger`).set(admin(owner)).send({}).expect(201);
    const run = triggered.body.data;
    expect(run).toMatchObject({ id: expect.stringMatching(/^run_/), scheduleId, dryRun: false });
    expect([dayBefore, todayIn('Pacific/Kiritimati')]).toContain(run.billingDate);
    expect(['running', 'completed']).toContain(run.status);

    const done = await finished(run.id, owner);
    expect(done).toMatchObject({ id: run.id, scheduleId, status: 'completed', progress: { contracts: 1, done: 1, failed: 0 } });
    const made = await api.http().get('/invoices').set(system(owner)).query({ invoiceRunId: run.id }).expect(200);
    expect(made.body.data.items.length).toBeGreaterThan(0);
    expect(made.body.data.items.every((invoice: { contractId: string }) => invoice.contractId === fixture.contractId)).toBe(true);
    // The run is the one in Postgres and in Temporal, under the id answered.
    const row = await api.db('invoice_runs').where({ id: run.id }).first();
    expect(row).toMatchObject({ organisation_id: owner.organisationId, schedule_id: scheduleId, workflow_id: `invoice-run:${run.id}` });
    expect((await api.temporal.client.workflow.getHandle(`invoice-run:${run.id}`).describe()).type).toBe('invoiceRunWorkflow');
  });

  it('when a paused schedule is triggered, then it still starts a run and answers it', async () => {
    const schedule = await api.http().post('/invoice-run-schedules').set(admin()).send({ name: 'Paused', cron: '0 6 1 * *', timezone: 'UTC', paused: true }).expect(201);
    const triggered = await api.http().post(`/invoice-run-schedules/${schedule.body.data.id}/trigger`).set(admin()).send({}).expect(201);
    expect(triggered.body.data).toMatchObject({ scheduleId: schedule.body.data.id, billingDate: todayIn('UTC') });
    expect(await finished(triggered.body.data.id, tenant)).toMatchObject({ status: 'completed' });
  });

  it("when the OpenAPI document is read, then the trigger's 201 answer is the run", async () => {
    const data = await documentedData('/invoice-run-schedules/{id}/trigger', 'post', '201');
    expect(Object.keys(data.properties)).toEqual(expect.arrayContaining(['id', 'scheduleId', 'billingDate', 'status', 'progress']));
    expect(data.required).toEqual(expect.arrayContaining(['id', 'scheduleId', 'billingDate', 'status']));
  });
});

describe('3. a draft shows the totals its raise would fix', () => {
  it('when a draft is read, listed and announced, then it shows its line amounts, subtotal, tax, total and base total, and raising it fixes exactly those figures', async () => {
    const owner = await createTenant(api, 'small-things-drafts');
    const fixture = await createBillingFixture(api, owner);
    await api.http().post(`/contracts/${fixture.contractId}/taxes`).set(system(owner)).send({ name: 'VAT', rate: '19' }).expect(201);
    const hook = await api.http().post('/webhooks/endpoints').set(admin(owner)).send({ url: receiver.url(`/drafts-${owner.organisationId}`), eventTypes: ['invoice.created'] }).expect(201);

    const created = await api
      .http()
      .post('/invoices')
      .set(system(owner))
      .send(invoiceBody(fixture.contractPlanId, [{ title: 'Seats', quantity: 3, price: 12.345 }, { title: 'Platform fee', quantity: 1, price: 100 }]))
      .expect(201);
    const id = created.body.data.id as string;
    // 3 × 12.345 = 37.035, rounded half-up to 37.04; 19% of 137.04 is 26.0376, rounded to 26.04.
    const figures = { status: 'draft', subtotal: '137.04', taxTotal: '26.04', total: '163.08', baseCurrency: 'USD', fxRate: '1', baseTotal: '163.08' };
    expect(created.body.data).toMatchObject(figures);
    expect(created.body.data.items.map((item: { amount: string }) => item.amount)).toEqual(['37.04', '100.00']);

    const read = await api.http().get(`/invoices/${id}`).set(system(owner)).expect(200);
    expect(read.body.data).toMatchObject(figures);
    const listed = await api.http().get('/invoices').set(system(owner)).query({ status: 'draft' }).expect(200);
    expect(listed.body.data.items.find((invoice: { id: string }) => invoice.id === id)).toMatchObject(figures);

    const [delivery] = await eventually(() => {
      const got = receiver.received(`/drafts-${owner.organisationId}`);
      return got.length > 0 ? got : undefined;
    });
    const event = new Webhook(hook.body.data.secret).verify(delivery!.body, delivery!.headers) as { type: string; data: Record<string, unknown> };
    expect(event).toMatchObject({ type: 'invoice.created', data: { id, ...figures } });

    const raised = await api.http().post(`/invoices/${id}/raise`).set(system(owner)).send({}).expect(200);
    expect(raised.body.data).toMatchObject({ ...figures, status: 'raised' });
    expect(raised.body.data.items.map((item: { amount: string }) => item.amount)).toEqual(['37.04', '100.00']);
  });

  it('when a draft is in another currency than the base currency and no rate applies yet, then it shows its totals, and no FX rate or base total until one does', async () => {
    const owner = await createTenant(api, 'small-things-draft-fx');
    const fixture = await createBillingFixture(api, owner, 'EUR');
    const created = await api.http().post('/invoices').set(system(owner)).send(invoiceBody(fixture.contractPlanId, [{ title: 'Platform fee', quantity: 2, price: 50.5 }])).expect(201);
    expect(created.body.data).toMatchObject({ currency: 'EUR', subtotal: '101.00', taxTotal: '0.00', total: '101.00', baseCurrency: 'USD', fxRate: null, baseTotal: null });
    await api.http().post('/fx-rates').set(system(owner)).send({ fromCurrency: 'EUR', toCurrency: 'USD', rate: '1.1', effectiveDate: '2026-01-01' }).expect(201);
    const read = await api.http().get(`/invoices/${created.body.data.id}`).set(system(owner)).expect(200);
    expect(read.body.data).toMatchObject({ total: '101.00', fxRate: '1.1', baseTotal: '111.10' });
  });

  it("when an invoice run makes drafts, then each shows its totals, and their subtotals add up to the run's totals", async () => {
    const owner = await createTenant(api, 'small-things-run-drafts');
    const fixture = await activeFixture(owner);
    const drafts = await invoicesOfRun<{ status: string; subtotal: string | null; total: string | null; invoiceRunId: string; items: Array<{ amount: string | null }> }>(api, owner, fixture.contractId, '2026-11-01');
    expect(drafts.length).toBeGreaterThan(0);
    for (const draft of drafts) {
      expect(draft.status).toBe('draft');
      expect(draft.subtotal).toBe(draft.items.reduce((sum, item) => sum + Number(item.amount), 0).toFixed(2));
      expect(draft.total).toBe(draft.subtotal);
    }
    const run = await api.http().get(`/invoice-runs/${drafts[0]!.invoiceRunId}`).set(system(owner)).expect(200);
    expect(run.body.data.totals).toEqual([{ currency: 'USD', amount: drafts.reduce((sum, draft) => sum + Number(draft.subtotal), 0).toFixed(2) }]);
  });
});

describe('4. the base currency is set at bootstrap, and a missing rate says how to fix it', () => {
  const bootstrap = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'src/main/bootstrap.ts', ...args], { cwd: ROOT, env: process.env, encoding: 'utf8' });

  it('when bootstrap is given --base-currency EUR, then the new organisation bills EUR contracts with no FX rate: its settings say EUR and a preview answers 200', async () => {
    const org = `Euro ${randomUUID()}`;
    const email = `admin-${randomUUID()}@euro.test`;
    const made = bootstrap('--org', org, '--email', email, '--password', 'a long password', '--base-currency', 'EUR');
    expect([made.status, made.stderr]).toEqual([0, '']);
    const answer = JSON.parse(made.stdout) as { organisationId: string; adminUserId: string; baseCurrency: string };
    expect(answer).toEqual({ organisationId: expect.stringMatching(/^org_/), adminUserId: expect.stringMatching(/^usr_/), baseCurrency: 'EUR' });

    const login = await api.http().post('/auth/login').send({ email, password: 'a long password' }).expect(200);
    const owner = { ...tenant, organisationId: answer.organisationId, adminToken: login.body.data.accessToken, systemToken: login.body.data.accessToken };
    expect((await api.http().get('/organisation/settings').set(admin(owner)).expect(200)).body.data.baseCurrency).toBe('EUR');
    const fixture = await activeFixture(owner, 'EUR');
    const preview = await api.http().get(`/contracts/${fixture.contractId}/upcoming-invoice`).query({ date: '2026-11-01' }).set(admin(owner)).expect(200);
    expect(preview.body.data.invoices[0]).toMatchObject({ currency: 'EUR' });

    // The same arguments again answer the same organisation; another base currency for it is refused.
    const again = bootstrap('--org', org, '--email', email, '--password', 'a long password', '--base-currency', 'EUR');
    expect(JSON.parse(again.stdout)).toEqual(answer);
    const other = bootstrap('--org', org, '--email', email, '--password', 'a long password', '--base-currency', 'GBP');
    expect(other.status).toBe(1);
    expect(other.stderr).toContain(`${org} already exists with base currency EUR; change it with PUT /organisation/settings`);
    // Nor does it change the admin's password: another one is refused, not silently ignored.
    const otherPassword = bootstrap('--org', org, '--email', email, '--password', 'another long password', '--base-currency', 'EUR');
    expect(otherPassword.status).toBe(1);
    expect(otherPassword.stderr).toContain(`${email} is already an admin of ${org}, with another password`);
  });

  it.each([['eur'], ['XXY'], ['']])('when --base-currency is %p, then bootstrap refuses it, naming the option, and creates nothing', async (code) => {
    const org = `Bad currency ${randomUUID()}`;
    const refused = bootstrap('--org', org, '--email', `admin-${randomUUID()}@bad.test`, '--password', 'a long password', '--base-currency', code);
    expect([refused.status, refused.stderr.trim().split('\n')]).toEqual([1, ['--base-currency must be an ISO 4217 currency code in upper case, e.g. EUR', expect.stringMatching(/^usage: npm run bootstrap -- --org/)]]);
    expect(await api.db('organisations').where({ name: org }).first()).toBeUndefined();
  });

  it('when bootstrap lacks an option, or cannot reach PostgreSQL, then it names the option, or says where it looked and what to do', () => {
    const bare = bootstrap();
    expect([bare.status, bare.stderr.trim().split('\n')]).toEqual([1, ['--org is required', '--email is required', '--password is required', expect.stringMatching(/^usage: npm run bootstrap/)]]);
    const noPassword = bootstrap('--org', 'Acme Ltd', '--email', 'admin@acme.test');
    expect(noPassword.stderr.trim().split('\n')[0]).toBe('--password is required');
    // A port nothing listens on.
    const unreachable = spawnSync(process.execPath, ['--import', 'tsx', 'src/main/bootstrap.ts', '--org', 'Acme Ltd', '--email', 'admin@acme.test', '--password', 'a long password'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' },
      encoding: 'utf8',
    });
    expect([unreachable.status, unreachable.stderr.trim()]).toEqual([1, expect.stringMatching(/^Could not reach the PostgreSQL of DATABASE_URL \(connect ECONNREFUSED 127\.0\.0\.1:1\)$/)]);
  });

  it('when an EUR contract is previewed in an organisation whose base currency is USD, then the 422 says to set the base currency in the organisation settings or to add the FX rate', async () => {
    const owner = await createTenant(api, 'small-things-usd-base');
    const fixture = await activeFixture(owner, 'EUR');
    const preview = await api.http().get(`/contracts/${fixture.contractId}/upcoming-invoice`).query({ date: '2026-11-01' }).set(system(owner));
    const message =
      "No EUR/USD FX rate effective on 2026-11-01: the organisation's base currency is USD. " +
      'If EUR is its base currency, set it in the organisation settings (PUT /organisation/settings {"baseCurrency": "EUR"}); ' +
      'otherwise add the rate (POST /fx-rates {"fromCurrency": "EUR", "toCurrency": "USD", "rate": "<USD per EUR>", "effectiveDate": "2026-11-01"})';
    expect([preview.status, preview.body]).toEqual([422, { status: 'error', message, errors: [{ code: 1012, message }] }]);

    // Either fix works: here, the base currency.
    await api.http().put('/organisation/settings').set(admin(owner)).send({ baseCurrency: 'EUR' }).expect(200);
    await api.http().get(`/contracts/${fixture.contractId}/upcoming-invoice`).query({ date: '2026-11-01' }).set(system(owner)).expect(200);
  });
  it('when an action that takes no body is sent properties, then 400 names each and nothing happens; {} or no body is taken, and a body of another type is 415', async () => {
    const owner = await createTenant(api, 'small-things-no-body');
    const fixture = await activeFixture(owner);
    const ending = await api.http().post(`/contracts/${fixture.contractId}/end`).set(system(owner)).send({ endDate: '2027-06-30', reason: 'x' });
    expect([ending.status, ending.body.errors]).toEqual([
      400,
      [
        { code: 1001, path: 'body.endDate', message: 'endDate is not a property this request takes' },
        { code: 1001, path: 'body.reason', message: 'reason is not a property this request takes' },
      ],
    ]);
    expect((await api.http().get(`/contracts/${fixture.contractId}`).set(system(owner)).expect(200)).body.data.status).toBe('active');
    const array = await api.http().post(`/contracts/${fixture.contractId}/suspend`).set(system(owner)).send([1]);
    expect([array.status, array.body.errors?.[0]?.path]).toEqual([400, 'body']);
    const text = await api.http().post(`/contracts/${fixture.contractId}/suspend`).set(system(owner)).set('content-type', 'text/plain').send('hello');
    expect([text.status, text.body.errors?.[0]?.path]).toEqual([415, 'headers.content-type']);
    expect((await api.http().get(`/contracts/${fixture.contractId}`).set(system(owner)).expect(200)).body.data.status).toBe('active');
    await api.http().post(`/contracts/${fixture.contractId}/suspend`).set(system(owner)).expect(200);
    await api.http().post(`/contracts/${fixture.contractId}/resume`).set(system(owner)).send({}).expect(200);
  });
});
