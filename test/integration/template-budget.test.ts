import { temporal } from '@temporalio/proto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody, type BillingFixture } from './support/billing-fixtures';
import { waitFor } from '../support/wait';

let api: TestApi;
let tenant: Tenant;
let system: ReturnType<typeof bearer>;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'template-budget');
  system = bearer(tenant.systemToken);
});
afterAll(() => api.close());

const DAY_MS = 24 * 60 * 60 * 1000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString().slice(0, 10);

/** The security review's template: 20,000 × 20,000 iterations from 40 KB of JSON. */
const hostileEmail = { subject: 'Hi', html: '{{#each a}}{{#each @root.a}}{{/each}}{{/each}}', to: ['victim@example.com'], variables: { a: new Array(20_000).fill(0) } };

/**
 * Invoice mail has a dozen fixed variables; eight loops over them, nested, are 14^8 iterations. Saving it
 * checks it without variables, where the loops have nothing to walk: it is accepted.
 */
const nestedOverInvoice = `${'{{#each @root.invoice}}'.repeat(8)}x${'{{/each}}'.repeat(8)}`;

async function timedLive(): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${api.url}/health/live`);
  expect(res.status).toBe(200);
  await res.text();
  return performance.now() - started;
}

describe('POST /emails with a template over budget', () => {
  jest.setTimeout(60_000);

  it('when the template loops out of hand, then it answers 422 naming the time limit, stores nothing, and /health/live answers at once meanwhile', async () => {
    const before = await api.db('emails').where({ organisation_id: tenant.organisationId }).count<{ count: string }[]>({ count: '*' });
    await timedLive();

    const started = performance.now();
    let answered = false;
    const posting = api
      .http()
      .post('/emails')
      .set(system)
      .send(hostileEmail)
      .then((res) => {
        answered = true;
        return { res, ms: performance.now() - started };
      });
    // Liveness asked again and again for as long as the hostile render runs.
    const during: number[] = [];
    await new Promise((resolve) => setTimeout(resolve, 100));
    while (!answered) {
      during.push(await timedLive());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const { res, ms } = await posting;

    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      status: 'error',
      message: 'Template over budget',
      errors: [{ code: 1011, message: 'the html did not render within the time limit of 500 ms' }],
    });
    // The render had its 500 ms, and no more.
    expect(ms).toBeGreaterThanOrEqual(500);
    expect(ms).toBeLessThan(5_000);
    expect(during.length).toBeGreaterThanOrEqual(2);
    expect(Math.max(...during)).toBeLessThan(2_000);
    expect(await api.db('emails').where({ organisation_id: tenant.organisationId }).count<{ count: string }[]>({ count: '*' })).toEqual(before);

    // The API renders normal messages as before, in a fresh render thread.
    const normal = await api.http().post('/emails').set(system).send({ subject: 'Hi {{name}}', html: '<p>{{name}}</p>', to: ['ann@example.com'], variables: { name: 'Ann & Co' } });
    expect(normal.status).toBe(201);
    expect(normal.body.data.subject).toBe('Hi Ann & Co');
    expect((await api.db('emails').where({ id: normal.body.data.id }).first()).html).toBe('<p>Ann &amp; Co</p>');
  });

  it('when a stored template goes over budget with the variables given, then it answers the same 422', async () => {
    const saved = await api
      .http()
      .post('/email-templates')
      .set(bearer(tenant.adminToken))
      .send({ name: 'Loops', kind: 'custom', subject: 'Hi', html: hostileEmail.html });
    expect(saved.status).toBe(201);
    const res = await api.http().post('/emails').set(system).send({ templateId: saved.body.data.id, to: ['a@example.com'], variables: hostileEmail.variables });
    expect([res.status, res.body.errors]).toEqual([422, [{ code: 1011, message: 'the html did not render within the time limit of 500 ms' }]]);
  });
});

describe('invoice mail and reminders with an organisation template over budget', () => {
  jest.setTimeout(120_000);
  let own: Tenant;
  let fixture: BillingFixture;

  beforeAll(async () => {
    own = await createTenant(api, 'template-budget-mail');
    fixture = await createBillingFixture(api, own);
  });

  it('when an invoice is sent with it, then the send fails at once, without retries, with 422 naming the template and the limit; the invoice stays raised', async () => {
    const saved = await api
      .http()
      .post('/email-templates')
      .set(bearer(own.adminToken))
      .send({ name: 'Invoice loops', kind: 'invoice', subject: 'Invoice {{invoice.number}}', html: nestedOverInvoice });
    expect(saved.status).toBe(201);
    const templateId = saved.body.data.id as string;
    const id = (await api.http().post('/invoices').set(bearer(own.systemToken)).send(invoiceBody(fixture.contractPlanId)).expect(201)).body.data.id as string;
    await api.http().post(`/invoices/${id}/raise`).set(bearer(own.systemToken)).expect(200);

    const started = performance.now();
    const sent = await api.http().post(`/invoices/${id}/send`).set(bearer(own.systemToken));
    const ms = performance.now() - started;
    expect(sent.status).toBe(422);
    expect(sent.body).toEqual({
      status: 'error',
      message: `The organisation's invoice e-mail template (${templateId}) is over budget: the html did not render within the time limit of 500 ms`,
      errors: [{ code: 1011, message: 'the html did not render within the time limit of 500 ms' }],
    });
    // One attempt: a retried step would back off from 500 ms and take far longer.
    expect(ms).toBeLessThan(5_000);
    expect((await api.http().get(`/invoices/${id}`).set(bearer(own.systemToken)).expect(200)).body.data.status).toBe('raised');
  });

  it("when an overdue invoice is reminded with it, then the reminder's activity fails once, as a non-retryable failure naming the template and the limit, and nothing is recorded", async () => {
    const other = await createTenant(api, 'template-budget-reminder');
    const otherFixture = await createBillingFixture(api, other);
    const saved = await api
      .http()
      .post('/email-templates')
      .set(bearer(other.adminToken))
      .send({ name: 'Reminder loops', kind: 'reminder', subject: 'Overdue {{invoice.number}}', html: nestedOverInvoice });
    expect(saved.status).toBe(201);
    const body = { ...invoiceBody(otherFixture.contractPlanId), invoiceData: { date: daysAgo(50) } };
    const id = (await api.http().post('/invoices').set(bearer(other.systemToken)).send(body).expect(201)).body.data.id as string;
    await api.http().post(`/invoices/${id}/raise`).set(bearer(other.systemToken)).expect(200);

    // Raised 20 days past its due date: the 14-day reminder is due at once, and its activity fails.
    const { EventType, RetryState } = temporal.api.enums.v1;
    const handle = api.temporal.client.workflow.getHandle(`invoice:${id}`);
    const failed = await waitFor(async () => {
      const history = await handle.fetchHistory();
      const events = history.events ?? [];
      const failure = events.find((event) => event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED);
      if (!failure) return undefined;
      const scheduled = events.find((event) => event.eventId?.toString() === failure.activityTaskFailedEventAttributes?.scheduledEventId?.toString());
      const started = events.find((event) => event.eventId?.toString() === failure.activityTaskFailedEventAttributes?.startedEventId?.toString());
      return { attributes: failure.activityTaskFailedEventAttributes!, activity: scheduled?.activityTaskScheduledEventAttributes?.activityType?.name, attempt: started?.activityTaskStartedEventAttributes?.attempt };
    }, 60_000);

    expect(failed.activity).toBe('sendInvoiceReminder');
    expect(failed.attempt).toBe(1);
    expect(failed.attributes.retryState).toBe(RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE);
    expect(failed.attributes.failure?.message).toBe(`The organisation's reminder e-mail template (${saved.body.data.id}) is over budget: the html did not render within the time limit of 500 ms`);
    expect(failed.attributes.failure?.applicationFailureInfo).toMatchObject({ type: 'unprocessable', nonRetryable: true });
    expect(await api.db('invoice_reminders').where({ invoice_id: id })).toEqual([]);
  });
});
