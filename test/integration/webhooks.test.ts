import { domainEvent } from '../../src/domain/events';
import { markDispatched, recordEvent } from '../../src/events/outbox';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createWebhookActivities } from '../../activities/webhooks.activities';
import { createServices, serviceDepsFrom } from '../../src/services';
import type { Logger } from 'pino';
import { destinationPolicy, postJson, REFUSED_NOT_HTTPS, REFUSED_NOT_PUBLIC, urlProblem } from '../../src/modules/webhooks/destination';
import { TRIGGERABLE_EVENT_TYPES } from '../../src/modules/webhooks/triggers';
import { createWebhookRepository } from '../../src/modules/webhooks/webhooks.repository';
import { createWebhookService, deliveryIdOf } from '../../src/modules/webhooks/webhooks.service';
import { webhookDeliveryWorkflow } from '../../workflows/webhook-delivery.workflow';
import { WEBHOOK_ATTEMPT_OFFSETS_MS } from '../../workflows/webhook-delivery.types';
import { timeSkippingEnvironment } from '../workflow/support/environment';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody } from './support/billing-fixtures';
import { eventually as until } from './support/webhook-receiver';
import { utcToday } from '../support/calendar';
import { workflowCode } from '../support/workflow-code';

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

/** An HTTP receiver on 127.0.0.1: records every request, and answers each path as told (200 by default). */
async function startReceiver() {
  const received: Received[] = [];
  const answers = new Map<string, number[]>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ path: request.url ?? '', headers: request.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const status = answers.get(request.url ?? '')?.shift() ?? 200;
      response.writeHead(status, { 'content-type': 'text/plain' }).end(`answered ${status}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path: string) => `${base}${path}`,
    received: (path: string) => received.filter((entry) => entry.path === path),
    answer: (path: string, ...statuses: number[]) => answers.set(path, statuses),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

let api: TestApi;
let tenant: Tenant;
let receiver: Receiver;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'webhooks');
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await api.close();
});

const admin = () => bearer(tenant.adminToken);
const system = () => bearer(tenant.systemToken);


async function endpoint(path: string, eventTypes: string[] = ['*']): Promise<{ id: string; secret: string }> {
  const res = await api.http().post('/webhooks/endpoints').set(admin()).send({ url: receiver.url(path), eventTypes });
  expect(res.status).toBe(201);
  expect(res.body.data.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
  return { id: res.body.data.id, secret: res.body.data.secret };
}

const verified = (secret: string, entry: Received) => new Webhook(secret).verify(entry.body, entry.headers) as { type: string; timestamp: string; data: Record<string, unknown> };

describe('webhooks', () => {
  it('when an endpoint names an event type twice, then 400 at body.eventTypes; with "*" beside other types it keeps ["*"]', async () => {
    const twice = await api.http().post('/webhooks/endpoints').set(admin()).send({ url: receiver.url('/twice'), eventTypes: ['invoice.paid', 'invoice.paid'] });
    expect([twice.status, twice.body.errors]).toEqual([400, [expect.objectContaining({ path: 'body.eventTypes', message: 'must not repeat an event type' })]]);
    const every = await api.http().post('/webhooks/endpoints').set(admin()).send({ url: receiver.url('/every'), eventTypes: ['*', 'invoice.paid'] }).expect(201);
    expect(every.body.data.eventTypes).toEqual(['*']);
    const changed = await api.http().put(`/webhooks/endpoints/${every.body.data.id}`).set(admin()).send({ eventTypes: ['invoice.sent', 'invoice.sent'] });
    expect(changed.status).toBe(400);
    // A type it does not know is named with the types it does.
    const unknown = await api.http().put(`/webhooks/endpoints/${every.body.data.id}`).set(admin()).send({ eventTypes: ['invoice.sent', 'invoice.exploded'] });
    expect([unknown.status, unknown.body.errors]).toEqual([400, [expect.objectContaining({ path: 'body.eventTypes.1', message: expect.stringMatching(/^must be "\*" or an event type: .*\binvoice\.paid\b/) })]]);
    await api.http().delete(`/webhooks/endpoints/${every.body.data.id}`).set(admin()).expect(200);
  });

  it('when an invoice is raised, sent and paid, then the endpoint receives invoice.raised, invoice.sent and invoice.paid, each signed', async () => {
    const { secret } = await endpoint('/lifecycle', ['invoice.raised', 'invoice.sent', 'invoice.paid']);
    const fixture = await createBillingFixture(api, tenant);
    const created = await api.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId, [{ title: 'Platform fee', quantity: 1, price: 100 }])).expect(201);
    const id = created.body.data.id as string;
    await api.http().post(`/invoices/${id}/raise`).set(system()).send({}).expect(200);
    await api.http().post(`/invoices/${id}/send`).set(system()).send({}).expect(200);
    await api.http().post(`/invoices/${id}/mark-paid`).set(system()).send({ paidDate: '2026-11-15' }).expect(200);

    const received = await until(() => (receiver.received('/lifecycle').length >= 3 ? receiver.received('/lifecycle') : undefined));
    const events = received.map((entry) => verified(secret, entry)).sort((a, b) => a.timestamp.localeCompare(b.timestamp));
    expect(events.map((event) => [event.type, event.data.id, event.data.status])).toEqual([
      ['invoice.raised', id, 'raised'],
      ['invoice.sent', id, 'sent'],
      ['invoice.paid', id, 'paid'],
    ]);
    // The payload's data is the invoice as GET /invoices/{id} shows it.
    const read = await api.http().get(`/invoices/${id}`).set(system()).expect(200);
    expect(events[2]!.data).toEqual(JSON.parse(JSON.stringify(read.body.data)));
    expect(new Set(received.map((entry) => entry.headers['webhook-id'])).size).toBe(3);

    // The receiver answers before the delivery activity records its attempt, so the log is read until it catches up.
    const ours = (items: { eventId: string }[]) => items.filter((delivery) => received.some((entry) => entry.headers['webhook-id'] === delivery.eventId));
    const delivered = await until(async () => {
      const deliveries = await api.http().get('/webhooks/deliveries').set(admin()).query({ status: 'delivered' }).expect(200);
      const items = ours(deliveries.body.data.items);
      return items.length >= 3 ? items : undefined;
    });
    expect(delivered).toHaveLength(3);
  });

  it('when a contract is activated, suspended and resumed, a payment is made and a usage batch completes, then each sends its event with the resource', async () => {
    const own = await createTenant(api, 'webhooks-events');
    const created = await api.http().post('/webhooks/endpoints').set(bearer(own.adminToken)).send({ url: receiver.url('/events'), eventTypes: ['contract.activated', 'contract.suspended', 'contract.resumed', 'payment.created', 'usage.batch_processed'] }).expect(201);
    const secret = created.body.data.secret as string;
    const fixture = await createBillingFixture(api, own);
    const auth = bearer(own.systemToken);
    await api.http().post(`/contracts/${fixture.contractId}/activate`).set(auth).send({}).expect(200);
    await api.http().post(`/contracts/${fixture.contractId}/suspend`).set(auth).send({}).expect(200);
    await api.http().post(`/contracts/${fixture.contractId}/resume`).set(auth).send({}).expect(200);
    const payment = await api.http().post('/payments').set(auth).send({ customerId: fixture.customerId, amount: '12.50', currency: 'USD', paidAt: '2026-11-20T10:00:00Z' }).expect(201);
    const entities = await api.http().get('/entities').set(auth).query({ type: 'customer' }).expect(200);
    const entityId = entities.body.data.items[0].id as string;
    const batch = await api.http().post('/events/batch').set(auth).send({ events: [{ CustomerEntityId: entityId, metric: 'webhook_calls', value: 1, timestamp: '2026-11-20T10:00:00Z' }] }).expect(200);

    const received = await until(() => (receiver.received('/events').length >= 5 ? receiver.received('/events') : undefined));
    const events = received.map((entry) => verified(secret, entry)).sort((a, b) => a.timestamp.localeCompare(b.timestamp));
    expect(events.map((event) => event.type)).toEqual(['contract.activated', 'contract.suspended', 'contract.resumed', 'payment.created', 'usage.batch_processed']);
    expect(events.slice(0, 3).map((event) => [event.data.id, event.data.status])).toEqual([
      [fixture.contractId, 'active'],
      [fixture.contractId, 'suspended'],
      [fixture.contractId, 'active'],
    ]);
    expect(events[3]!.data).toEqual(payment.body.data);
    expect(events[4]!.data).toMatchObject({ id: batch.body.data.batchId, status: 'completed', summary: { success: 1, failed: 0, total: 1 } });
    // Triggered with an object, the event carries its current state.
    await api.http().post('/webhooks/trigger').set(auth).send({ eventType: 'contract.resumed', objectId: fixture.contractId }).expect(201);
    const again = await until(() => (receiver.received('/events').length >= 6 ? receiver.received('/events') : undefined));
    expect(verified(secret, again.at(-1)!)).toMatchObject({ type: 'contract.resumed', triggered: true, data: { id: fixture.contractId, status: 'active' } });
    // A triggered usage.batch_processed has the real one's shape: without the per-event lists.
    await api.http().post('/webhooks/trigger').set(auth).send({ eventType: 'usage.batch_processed', objectId: batch.body.data.batchId }).expect(201);
    const batchAgain = await until(() => (receiver.received('/events').length >= 7 ? receiver.received('/events') : undefined));
    expect(verified(secret, batchAgain.at(-1)!).data).toEqual(events[4]!.data);
    // Events of real changes carry no `triggered`.
    expect(events.filter((event) => 'triggered' in event)).toEqual([]);
  });

  it('when drafts are created by hand or by an invoice run, then invoice.created carries each', async () => {
    const own = await createTenant(api, 'webhooks-created');
    const created = await api.http().post('/webhooks/endpoints').set(bearer(own.adminToken)).send({ url: receiver.url('/created'), eventTypes: ['invoice.created'] }).expect(201);
    const fixture = await createBillingFixture(api, own);
    const auth = bearer(own.systemToken);
    const byHand = await api.http().post('/invoices').set(auth).send(invoiceBody(fixture.contractPlanId, [{ title: 'Setup', quantity: 1, price: 50 }])).expect(201);
    await api.http().post(`/contracts/${fixture.contractId}/activate`).set(auth).send({}).expect(200);
    const run = await api.http().post('/invoice-runs').set(auth).send({ billingDate: new Date().toISOString().slice(0, 10), contractIds: [fixture.contractId] }).expect(201);
    const made = await until(async () => {
      const read = await api.http().get(`/invoice-runs/${run.body.data.id}`).set(auth).expect(200);
      return read.body.data.status === 'running' ? undefined : read.body.data;
    });
    expect(made.invoicesCreated).toBeGreaterThan(0);
    const runInvoices = await api.http().get('/invoices').set(auth).query({ invoiceRunId: run.body.data.id }).expect(200);

    const expected = [byHand.body.data.id, ...runInvoices.body.data.items.map((invoice: { id: string }) => invoice.id)];
    const received = await until(() => (receiver.received('/created').length >= expected.length ? receiver.received('/created') : undefined));
    const events = received.map((entry) => verified(created.body.data.secret, entry));
    expect(events.every((event) => event.type === 'invoice.created' && event.data.status === 'draft')).toBe(true);
    expect(events.map((event) => event.data.id).sort()).toEqual([...expected].sort());
  });

  it('when a milestone is achieved, then milestone.achieved carries the milestone and its draft invoice', async () => {
    const own = await createTenant(api, 'webhooks-milestone');
    const created = await api.http().post('/webhooks/endpoints').set(bearer(own.adminToken)).send({ url: receiver.url('/milestone'), eventTypes: ['milestone.achieved'] }).expect(201);
    const fixture = await createBillingFixture(api, own);
    const auth = bearer(own.systemToken);
    await api.http().post(`/contracts/${fixture.contractId}/activate`).set(auth).send({}).expect(200);
    const base = `/contracts/${fixture.contractId}/plans/${fixture.contractPlanId}/milestones`;
    const milestone = await api.http().post(base).set(auth).send({ planItemId: fixture.planItemId, name: 'Go-live', amount: '40' }).expect(201);
    const achieved = await api.http().post(`${base}/${milestone.body.data.id}/achieve`).set(auth).send({}).expect(200);

    const [entry] = await until(() => (receiver.received('/milestone').length > 0 ? receiver.received('/milestone') : undefined));
    const event = verified(created.body.data.secret, entry!);
    expect(event.type).toBe('milestone.achieved');
    expect(event.data).toMatchObject({
      contractId: fixture.contractId,
      milestone: { id: milestone.body.data.id, name: 'Go-live', invoiceId: achieved.body.data.invoiceId },
      invoice: { id: achieved.body.data.invoiceId, status: 'draft', items: [expect.objectContaining({ title: 'Go-live' })] },
    });
  });

  it('when a change rolls back, then its event is never sent', async () => {
    await endpoint('/rolled-back');
    await expect(
      api.db.transaction(async (trx) => {
        const payment = { id: 'pay_rolled_back', rolledBack: true };
        await recordEvent(trx, tenant.organisationId, domainEvent('payment.created', payment));
        throw new Error('the change fails after its event was written');
      }),
    ).rejects.toThrow('the change fails');
    // A committed event sent after it arrives; the rolled-back one never does.
    await api.http().post('/webhooks/trigger').set(system()).send({ eventType: 'webhook.test' }).expect(201);
    const received = await until(() => (receiver.received('/rolled-back').length > 0 ? receiver.received('/rolled-back') : undefined));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(receiver.received('/rolled-back').map((entry) => JSON.parse(entry.body).data)).toEqual([{ test: true, message: expect.any(String) }]);
    expect(received).toHaveLength(1);
    expect(await api.db('webhook_events').where({ organisation_id: tenant.organisationId }).whereRaw("payload -> 'data' ->> 'rolledBack' = 'true'")).toEqual([]);
  });

  it('when the receiver answers 410, then the endpoint is disabled and gets nothing more', async () => {
    const { id } = await endpoint('/gone');
    receiver.answer('/gone', 410);
    await api.http().post('/webhooks/trigger').set(system()).send({ eventType: 'webhook.test' }).expect(201);
    const disabled = await until(async () => {
      const read = await api.http().get(`/webhooks/endpoints/${id}`).set(admin()).expect(200);
      return read.body.data.enabled ? undefined : read.body.data;
    });
    expect(disabled.disabledReason).toMatch(/410 Gone/);
    await api.http().post('/webhooks/trigger').set(system()).send({ eventType: 'webhook.test' }).expect(201);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(receiver.received('/gone')).toHaveLength(1);
    const deliveries = await api.http().get('/webhooks/deliveries').set(admin()).query({ endpointId: id }).expect(200);
    expect(deliveries.body.data.items).toMatchObject([{ status: 'failed', attempts: [{ attempt: 1, statusCode: 410, responseExcerpt: 'answered 410' }] }]);
  });

  it('when the secret is rotated, then both the new and the old secret verify until the overlap ends', async () => {
    const { id, secret: old } = await endpoint('/rotated');
    const rotated = await api.http().post(`/webhooks/endpoints/${id}/rotate-secret`).set(admin()).send({}).expect(200);
    const fresh = rotated.body.data.secret as string;
    expect(fresh).not.toBe(old);
    expect(Date.parse(rotated.body.data.secretRotationEndsAt) - Date.now()).toBeGreaterThan(23 * 60 * 60 * 1000);
    await api.http().post('/webhooks/trigger').set(system()).send({ eventType: 'webhook.test' }).expect(201);
    const [entry] = await until(() => (receiver.received('/rotated').length > 0 ? receiver.received('/rotated') : undefined));
    expect(entry!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verified(fresh, entry!).type).toBe('webhook.test');
    expect(verified(old, entry!).type).toBe('webhook.test');
    expect(() => verified('whsec_' + Buffer.from('someone else entirely!!!').toString('base64'), entry!)).toThrow();
  });

  it('when a delivery is redelivered, then the endpoint receives the same event again, with the same webhook-id', async () => {
    const { id } = await endpoint('/again');
    const triggered = await api.http().post('/webhooks/trigger').set(system()).send({ eventType: 'webhook.test' }).expect(201);
    await until(() => (receiver.received('/again').length === 1 ? true : undefined));
    const listed = await until(async () => {
      const res = await api.http().get('/webhooks/deliveries').set(admin()).query({ endpointId: id, status: 'delivered' }).expect(200);
      return res.body.data.items.length === 1 ? res.body.data.items[0] : undefined;
    });
    expect(listed).toMatchObject({ eventId: triggered.body.data.eventId, eventType: 'webhook.test', attempts: [{ attempt: 1, statusCode: 200 }] });
    const redelivered = await api.http().post(`/webhooks/deliveries/${listed.id}/redeliver`).set(admin()).send({}).expect(200);
    expect(redelivered.body.data.status).toBe('pending');
    const both = await until(() => (receiver.received('/again').length === 2 ? receiver.received('/again') : undefined));
    expect(both.map((entry) => entry.headers['webhook-id'])).toEqual([triggered.body.data.eventId, triggered.body.data.eventId]);
    const after = await until(async () => {
      const res = await api.http().get('/webhooks/deliveries').set(admin()).query({ endpointId: id }).expect(200);
      return res.body.data.items[0].status === 'delivered' ? res.body.data.items[0] : undefined;
    });
    expect(after.attempts).toHaveLength(2);
  });

  it('when an endpoint is deleted while its delivery waits to retry, then the delivery stops at its next attempt', async () => {
    const { id } = await endpoint('/deleted');
    receiver.answer('/deleted', 500, 500, 500);
    const triggered = await api.http().post('/webhooks/trigger').set(system()).send({ eventType: 'webhook.test' }).expect(201);
    await until(() => (receiver.received('/deleted').length === 1 ? true : undefined));
    await api.http().delete(`/webhooks/endpoints/${id}`).set(admin()).expect(200);
    const handle = api.temporal.client.workflow.getHandle(`webhook-delivery:${deliveryIdOf(id, triggered.body.data.eventId)}:0`);
    expect(await handle.result()).toBe('stopped');
    expect(receiver.received('/deleted')).toHaveLength(1);
  });

  it('when a SystemUser manages endpoints, then it gets the 403 envelope; it may trigger events', async () => {
    const { id } = await endpoint('/admin-only');
    const attempts = [
      ['post', '/webhooks/endpoints'],
      ['get', '/webhooks/endpoints'],
      ['get', `/webhooks/endpoints/${id}`],
      ['put', `/webhooks/endpoints/${id}`],
      ['delete', `/webhooks/endpoints/${id}`],
      ['post', `/webhooks/endpoints/${id}/rotate-secret`],
      ['get', '/webhooks/deliveries'],
      ['post', '/webhooks/deliveries/whd_missing/redeliver'],
    ] as const;
    for (const [method, path] of attempts) {
      const res = await api.http()[method](path).set(system()).send(method === 'get' || method === 'delete' ? undefined : { url: receiver.url('/x'), eventTypes: ['*'] });
      expect([`${method} ${path}`, res.status, res.body]).toEqual([`${method} ${path}`, 403, { status: 'error', message: 'Forbidden', errors: [] }]);
    }
    expect((await api.http().get(`/webhooks/endpoints/${id}`).set(admin())).body.data.url).toBe(receiver.url('/admin-only'));
    expect((await api.http().post('/webhooks/trigger').set(system()).send({ eventType: 'webhook.test' })).status).toBe(201);
  });

  it('when a destination is private, then production refuses it unless its host and port are allowed', async () => {
    const production = destinationPolicy({ NODE_ENV: 'production' });
    expect(urlProblem('http://example.com/hook', production)).toBe(REFUSED_NOT_HTTPS);
    expect(urlProblem('https://10.1.2.3/hook', production)).toBe(REFUSED_NOT_PUBLIC);
    expect(urlProblem('https://[::1]/hook', production)).toBe(REFUSED_NOT_PUBLIC);
    // A name that resolves to a private address is refused when it is resolved, at each attempt, in words that name no address.
    const byName = receiver.url('/private').replace('127.0.0.1', 'localhost');
    const refused = await postJson(byName, {}, '{}', { ...production, httpsOnly: false }, 2000);
    expect(refused).toMatchObject({ statusCode: null, error: REFUSED_NOT_PUBLIC, detail: expect.stringMatching(/^localhost resolves to (127\.0\.0\.1|::1), which is not a public address$/) });
    // Listed with its port, the host is exempt on that port only; a bare host means port 443.
    const port = new URL(receiver.url('/')).port;
    const allowed = await postJson(receiver.url('/private'), {}, '{}', destinationPolicy({ NODE_ENV: 'production', WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${port}` }), 2000);
    expect(allowed).toMatchObject({ statusCode: 200, error: null });
    expect(await postJson(byName, {}, '{}', destinationPolicy({ NODE_ENV: 'production', WEBHOOK_ALLOWED_HOSTS: `localhost:${port}` }), 2000)).toMatchObject({ statusCode: 200, error: null });
    for (const listed of ['127.0.0.1', `127.0.0.1:${Number(port) + 1}`, `localhost:${port}`]) {
      const policy = { ...destinationPolicy({ NODE_ENV: 'production', WEBHOOK_ALLOWED_HOSTS: listed }), httpsOnly: false };
      expect([listed, await postJson(receiver.url('/private'), {}, '{}', policy, 2000)]).toEqual([listed, expect.objectContaining({ statusCode: null, error: REFUSED_NOT_PUBLIC })]);
    }
    expect(receiver.received('/private')).toHaveLength(2);
    // Through the API (development here), a URL that is not http(s) is refused with the field named.
    const bad = await api.http().post('/webhooks/endpoints').set(admin()).send({ url: 'ftp://example.com/x', eventTypes: ['*'] });
    expect([bad.status, bad.body]).toEqual([400, { status: 'error', message: 'Validation failed', errors: [{ code: 1001, path: 'body.url', message: 'the URL must use http or https' }] }]);
    // Kept as it is sent: a space or a letter of another script, which the parser would encode quietly, is refused.
    for (const url of ['https://hooks.example.com/a b', 'https://bücher.example/hook']) {
      const unencoded = await api.http().post('/webhooks/endpoints').set(admin()).send({ url, eventTypes: ['*'] });
      expect([url, unencoded.status, unencoded.body.errors]).toEqual([url, 400, [{ code: 1001, path: 'body.url', message: expect.stringContaining('visible ASCII characters') }]]);
    }
  });

  it('when an API runs in production, then it refuses private destinations in words that name no address, and allows only a listed host:port', async () => {
    const port = new URL(receiver.url('/')).port;
    const production = await startTestApi({ NODE_ENV: 'production', WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${port}` });
    try {
      const refusal = (message: string) => ({ status: 'error', message: 'Validation failed', errors: [{ code: 1001, path: 'body.url', message }] });
      const create = (url: string) => production.http().post('/webhooks/endpoints').set(admin()).send({ url, eventTypes: ['webhook.test'] });
      const answers = [];
      for (const url of ['https://10.1.2.3/hook', 'https://[fd00::1]:8443/hook', `https://127.0.0.1:${Number(port) + 1}/hook`, 'https://127.0.0.1/hook', `http://127.0.0.1:${Number(port) + 1}/hook`, 'http://hooks.example.com/hook']) {
        const res = await create(url);
        answers.push([url, res.status, res.body]);
      }
      expect(answers).toEqual([
        ['https://10.1.2.3/hook', 400, refusal(REFUSED_NOT_PUBLIC)],
        ['https://[fd00::1]:8443/hook', 400, refusal(REFUSED_NOT_PUBLIC)],
        [`https://127.0.0.1:${Number(port) + 1}/hook`, 400, refusal(REFUSED_NOT_PUBLIC)],
        ['https://127.0.0.1/hook', 400, refusal(REFUSED_NOT_PUBLIC)],
        [`http://127.0.0.1:${Number(port) + 1}/hook`, 400, refusal(REFUSED_NOT_HTTPS)],
        ['http://hooks.example.com/hook', 400, refusal(REFUSED_NOT_HTTPS)],
      ]);
      expect(REFUSED_NOT_PUBLIC).toBe('the destination is not allowed: it does not resolve to a public address');
      expect(REFUSED_NOT_HTTPS).toBe('the destination is not allowed: it must use https');
      // The listed host on its port, plain http included, is exempt: any path.
      const listed = await create(receiver.url('/listed/any/path'));
      expect(listed.status).toBe(201);
      const changed = await production.http().put(`/webhooks/endpoints/${listed.body.data.id}`).set(admin()).send({ url: 'https://192.168.1.20/hook' });
      expect([changed.status, changed.body]).toEqual([400, refusal(REFUSED_NOT_PUBLIC)]);
    } finally {
      await production.close();
    }
  });

  it('when an attempt is refused because the host resolves to a private address or not at all, then the delivery log says so in the same words, naming no address; the worker log has the details', async () => {
    const own = await createTenant(api, 'webhooks-refused');
    const internal = await api.http().post('/webhooks/endpoints').set(bearer(own.adminToken)).send({ url: receiver.url('/internal').replace('127.0.0.1', 'localhost'), eventTypes: ['*'] }).expect(201);
    const missing = await api.http().post('/webhooks/endpoints').set(bearer(own.adminToken)).send({ url: 'http://no-such-host.invalid/hook', eventTypes: ['*'] }).expect(201);
    const endpoints = [internal.body.data.id as string, missing.body.data.id as string];
    // Written as dispatched, so that the stack's own worker (development rules) leaves the deliveries to this test.
    const eventId = await api.db.transaction(async (trx) => {
      const repository = createWebhookRepository(trx);
      const id = await repository.emitTriggered(own.organisationId, 'webhook.test', { refused: true }, null);
      await markDispatched(trx, [id]);
      await repository.createDeliveries(endpoints.map((endpointId) => ({ id: deliveryIdOf(endpointId, id), organisationId: own.organisationId, endpointId, eventId: id })));
      return id;
    });
    const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
    const logger = { warn: (fields: Record<string, unknown>, message: string) => warnings.push({ fields, message }) } as unknown as Logger;
    // The worker's rules in production, but for plain http, which the receiver speaks. An earlier test
    // connected to localhost on the receiver's port while it was allowed: no attempt reuses that connection.
    const worker = createWebhookService({ db: api.db, policy: { ...destinationPolicy({ NODE_ENV: 'production' }), httpsOnly: false }, secrets: serviceDepsFrom(api.config, api.db).secrets, logger });
    for (const endpointId of endpoints) {
      expect(await worker.attempt({ deliveryId: deliveryIdOf(endpointId, eventId), endpointId, generation: 0, attempt: 1 })).toBe('retry');
    }
    expect(receiver.received('/internal')).toHaveLength(0);

    const deliveries = await api.http().get('/webhooks/deliveries').set(bearer(own.adminToken)).expect(200);
    expect(deliveries.body.data.items.map((delivery: { endpointId: string; attempts: unknown[] }) => [delivery.endpointId, delivery.attempts]).sort()).toEqual(
      endpoints.map((endpointId) => [endpointId, [{ attempt: 1, statusCode: null, durationMs: expect.any(Number), responseExcerpt: null, error: 'the destination is not allowed: it does not resolve to a public address', at: expect.any(String) }]]).sort(),
    );
    expect(JSON.stringify(deliveries.body)).not.toMatch(/127\.0\.0\.1|::1|resolves to|ENOTFOUND|EAI_/);
    const stored = await api.db('webhook_attempts').whereIn('delivery_id', endpoints.map((endpointId) => deliveryIdOf(endpointId, eventId))).select('error', 'response_excerpt');
    expect(stored).toEqual([
      { error: REFUSED_NOT_PUBLIC, response_excerpt: null },
      { error: REFUSED_NOT_PUBLIC, response_excerpt: null },
    ]);
    // Operators read what was refused, and why, in the worker's own log.
    const reasons = Object.fromEntries(warnings.map((warning) => [warning.fields.endpointId, warning]));
    expect(reasons[endpoints[0]!]).toEqual({
      fields: expect.objectContaining({ organisationId: own.organisationId, deliveryId: deliveryIdOf(endpoints[0]!, eventId), reason: expect.stringMatching(/^localhost resolves to (127\.0\.0\.1|::1), which is not a public address$/) }),
      message: `webhook attempt failed: ${REFUSED_NOT_PUBLIC}`,
    });
    expect(reasons[endpoints[1]!]!.fields.reason).toMatch(/^no-such-host\.invalid does not resolve: getaddrinfo (ENOTFOUND|EAI_AGAIN)/);
  });
});

describe('triggered webhooks', () => {
  const trigger = (auth: Record<string, string>, eventType: string, objectId?: string) => api.http().post('/webhooks/trigger').set(auth).send(objectId ? { eventType, objectId } : { eventType });
  const conflict = (message: string) => ({ status: 'error', message, errors: [{ code: 1003, message }] });
  const invalid = (path: string, message: string) => ({ status: 'error', message: 'Validation failed', errors: [{ code: 1001, path, message }] });

  it('when an object is not in the state the event names, then the trigger answers 409 naming the state it is in, and sends nothing', async () => {
    const own = await createTenant(api, 'webhooks-trigger-state');
    await api.http().post('/webhooks/endpoints').set(bearer(own.adminToken)).send({ url: receiver.url('/trigger-state'), eventTypes: ['*'] }).expect(201);
    const fixture = await createBillingFixture(api, own);
    const auth = bearer(own.systemToken);
    const answers: unknown[] = [];
    const expectAnswer = async (eventType: string, objectId: string) => {
      const res = await trigger(auth, eventType, objectId);
      answers.push([eventType, res.status, res.body]);
    };
    // Dated today, the invoice is not overdue once sent, so no reminder makes it so.
    const invoice = (await api.http().post('/invoices').set(auth).send({ ...invoiceBody(fixture.contractPlanId), invoiceData: { date: utcToday() } }).expect(201)).body.data.id as string;
    await expectAnswer('invoice.paid', invoice);
    await expectAnswer('invoice.raised', invoice);
    await api.http().post(`/invoices/${invoice}/raise`).set(auth).send({}).expect(200);
    await api.http().post(`/invoices/${invoice}/send`).set(auth).send({}).expect(200);
    // The invoice was raised, but is sent now: the event names the current state, not one passed through.
    await expectAnswer('invoice.raised', invoice);
    await expectAnswer('invoice.created', invoice);
    await expectAnswer('invoice.paid', invoice);
    await expectAnswer('invoice.overdue', invoice);
    await expectAnswer('contract.terminated', fixture.contractId);
    await expectAnswer('contract.activated', fixture.contractId);
    await api.http().post(`/contracts/${fixture.contractId}/activate`).set(auth).send({}).expect(200);
    await expectAnswer('contract.terminated', fixture.contractId);
    await expectAnswer('contract.resumed', fixture.contractId);
    await expectAnswer('contract.suspended', fixture.contractId);
    await api.http().post(`/invoices/${invoice}/mark-paid`).set(auth).send({ paidDate: '2026-11-15' }).expect(200);
    const payments = await api.http().get('/payments').set(auth).query({ invoiceId: invoice }).expect(200);
    await expectAnswer('payment.created', payments.body.data.items[0].id);
    expect(answers).toEqual([
      ['invoice.paid', 409, conflict('the invoice is draft, not paid; invoice.paid cannot be triggered for it')],
      ['invoice.raised', 409, conflict('the invoice is draft, not raised; invoice.raised cannot be triggered for it')],
      ['invoice.raised', 409, conflict('the invoice is sent, not raised; invoice.raised cannot be triggered for it')],
      ['invoice.created', 409, conflict('the invoice is sent, not draft; invoice.created cannot be triggered for it')],
      ['invoice.paid', 409, conflict('the invoice is sent, not paid; invoice.paid cannot be triggered for it')],
      ['invoice.overdue', 409, conflict('the invoice is sent with no reminder sent, not overdue (raised or sent, with a reminder sent); invoice.overdue cannot be triggered for it')],
      ['contract.terminated', 409, conflict('the contract is draft, not terminated; contract.terminated cannot be triggered for it')],
      ['contract.activated', 409, conflict('the contract is draft, not active; contract.activated cannot be triggered for it')],
      ['contract.terminated', 409, conflict('the contract is active, not terminated; contract.terminated cannot be triggered for it')],
      ['contract.resumed', 409, conflict('the contract is active and was never suspended, not active after a suspension; contract.resumed cannot be triggered for it')],
      ['contract.suspended', 409, conflict('the contract is active, not suspended; contract.suspended cannot be triggered for it')],
      ['payment.created', 409, conflict(`the payment is the one recorded when invoice ${invoice} was marked paid, not one recorded through POST /payments; payment.created cannot be triggered for it`)],
    ]);
    // The real changes were sent; nothing triggered was written or sent.
    await until(() => (receiver.received('/trigger-state').length >= 5 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(receiver.received('/trigger-state').map((entry) => JSON.parse(entry.body) as Record<string, unknown>).filter((payload) => 'triggered' in payload)).toEqual([]);
    expect(await api.db('webhook_events').where({ organisation_id: own.organisationId }).whereRaw("payload \\? 'triggered'")).toEqual([]);
  });

  it('when an object is in the state the event names, then the event is sent once, marked triggered; a repeat within 24 hours answers the same webhook-id and sends nothing', async () => {
    const own = await createTenant(api, 'webhooks-triggered');
    const created = await api.http().post('/webhooks/endpoints').set(bearer(own.adminToken)).send({ url: receiver.url('/triggered'), eventTypes: ['invoice.paid', 'payment.created'] }).expect(201);
    const secret = created.body.data.secret as string;
    const fixture = await createBillingFixture(api, own);
    const auth = bearer(own.systemToken);
    const invoice = (await api.http().post('/invoices').set(auth).send(invoiceBody(fixture.contractPlanId)).expect(201)).body.data.id as string;
    await api.http().post(`/invoices/${invoice}/mark-paid`).set(auth).send({ paidDate: '2026-11-15' }).expect(200);
    const payment = (await api.http().post('/payments').set(auth).send({ customerId: fixture.customerId, amount: '12.50', currency: 'USD', paidAt: '2026-11-20T10:00:00Z' }).expect(201)).body.data.id as string;

    const first = await trigger(auth, 'invoice.paid', invoice);
    expect([first.status, first.body.data]).toEqual([201, { eventId: expect.stringMatching(/^msg_/), eventType: 'invoice.paid', repeated: false }]);
    const again = await trigger(auth, 'invoice.paid', invoice);
    expect([again.status, again.body.data]).toEqual([200, { eventId: first.body.data.eventId, eventType: 'invoice.paid', repeated: true }]);
    // Three triggers of payment.created: one event, one webhook-id.
    const paid = [];
    for (let i = 0; i < 3; i += 1) paid.push(await trigger(auth, 'payment.created', payment));
    expect(paid.map((res) => [res.status, res.body.data.eventId, res.body.data.repeated])).toEqual([
      [201, expect.stringMatching(/^msg_/), false],
      [200, paid[0]!.body.data.eventId, true],
      [200, paid[0]!.body.data.eventId, true],
    ]);

    // Two real events (invoice.paid, payment.created) and two triggered ones, each once.
    await until(() => (receiver.received('/triggered').length >= 4 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const received = receiver.received('/triggered').map((entry) => ({ id: entry.headers['webhook-id'], event: verified(secret, entry) as Record<string, unknown> & { data: Record<string, unknown> } }));
    expect(received).toHaveLength(4);
    const triggered = received.filter((entry) => entry.event.triggered === true);
    const real = received.filter((entry) => !('triggered' in entry.event));
    expect(triggered.map((entry) => [entry.id, entry.event.type, entry.event.data.id]).sort()).toEqual(
      [
        [first.body.data.eventId, 'invoice.paid', invoice],
        [paid[0]!.body.data.eventId, 'payment.created', payment],
      ].sort(),
    );
    expect(triggered.find((entry) => entry.event.type === 'invoice.paid')!.event).toMatchObject({ type: 'invoice.paid', triggered: true, data: { id: invoice, status: 'paid' } });
    expect(real.map((entry) => entry.event.type).sort()).toEqual(['invoice.paid', 'payment.created']);
    expect(new Set(received.map((entry) => entry.id)).size).toBe(4);

    // After 24 hours, the same trigger is a new event with a new webhook-id.
    await api.db('webhook_events').where({ id: first.body.data.eventId }).update({ created_at: api.db.raw("now() - interval '24 hours 1 minute'") });
    const later = await trigger(auth, 'invoice.paid', invoice);
    expect([later.status, later.body.data.repeated]).toEqual([201, false]);
    expect(later.body.data.eventId).not.toBe(first.body.data.eventId);
  });

  it('when two triggers of the same event for the same object race, then both answer one event', async () => {
    const own = await createTenant(api, 'webhooks-trigger-race');
    const fixture = await createBillingFixture(api, own);
    const auth = bearer(own.systemToken);
    const payment = (await api.http().post('/payments').set(auth).send({ customerId: fixture.customerId, amount: '5.00', currency: 'USD', paidAt: '2026-11-20T10:00:00Z' }).expect(201)).body.data.id as string;
    const answers = await Promise.all(Array.from({ length: 6 }, () => trigger(auth, 'payment.created', payment)));
    expect(answers.map((res) => res.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((res) => res.body.data.eventId)).size).toBe(1);
    expect(await api.db('webhook_events').where({ organisation_id: own.organisationId, type: 'payment.created', triggered_object_id: payment }).count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);
  });

  it('when a trigger names no object, an event of a step, an object of webhook.test or a missing object, then 400 or 404 says which', async () => {
    const auth = system();
    const answers = [];
    for (const body of [
      { eventType: 'invoice.paid' },
      { eventType: 'payment.created' },
      { eventType: 'webhook.test', objectId: 'inv_1' },
      { eventType: 'invoice.transition_undone', objectId: 'inv_1' },
      { eventType: 'contract.plan_changed', objectId: 'con_1' },
      { eventType: 'invoice.paid', objectId: 'inv_missing' },
      { eventType: 'contract.activated', objectId: 'con_missing' },
    ]) {
      const res = await api.http().post('/webhooks/trigger').set(auth).send(body);
      answers.push([body, res.status, res.body]);
    }
    const notTriggered = `must be webhook.test or an event that names its object's state (${TRIGGERABLE_EVENT_TYPES.slice(1).join(', ')}); events of a step (an undo, a plan change, a milestone, credits) are not triggered: redeliver the original delivery`;
    expect(answers).toEqual([
      [{ eventType: 'invoice.paid' }, 400, invalid('body.objectId', 'objectId is required: invoice.paid carries the invoice it reports')],
      [{ eventType: 'payment.created' }, 400, invalid('body.objectId', 'objectId is required: payment.created carries the payment it reports')],
      [{ eventType: 'webhook.test', objectId: 'inv_1' }, 400, invalid('body.objectId', 'webhook.test carries no object: leave objectId out')],
      [{ eventType: 'invoice.transition_undone', objectId: 'inv_1' }, 400, invalid('body.eventType', notTriggered)],
      [{ eventType: 'contract.plan_changed', objectId: 'con_1' }, 400, invalid('body.eventType', notTriggered)],
      [{ eventType: 'invoice.paid', objectId: 'inv_missing' }, 404, { status: 'error', message: 'Invoice not found', errors: [{ code: 1002, message: 'Invoice not found' }] }],
      [{ eventType: 'contract.activated', objectId: 'con_missing' }, 404, { status: 'error', message: 'Contract not found', errors: [{ code: 1002, message: 'Contract not found' }] }],
    ]);
  });
});

describe('webhook delivery schedule (time-skipping server)', () => {
  let env: TestWorkflowEnvironment;

  beforeAll(async () => {
    env = await timeSkippingEnvironment();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('when the receiver answers 500 three times and then 200, then one delivery succeeds on its fourth attempt, at 0 s, 5 s, 30 s and 2 min, with one webhook-id', async () => {
    const services = createServices(serviceDepsFrom(api.config, api.db));
    const own = await createTenant(api, 'webhooks-schedule');
    const created = await services.webhooks.createEndpoint(own.organisationId, { url: receiver.url('/flaky'), eventTypes: ['*'], enabled: true });
    receiver.answer('/flaky', 500, 500, 500, 200);
    // The event is written and marked dispatched at once, so that the stack's own dispatcher leaves it to this test.
    const eventId = await api.db.transaction(async (trx) => {
      const repository = createWebhookRepository(trx);
      const id = await repository.emitTriggered(own.organisationId, 'webhook.test', { flaky: true }, null);
      await markDispatched(trx, [id]);
      await repository.createDeliveries([{ id: deliveryIdOf(created.id, id), organisationId: own.organisationId, endpointId: created.id, eventId: id }]);
      return id;
    });
    const deliveryId = deliveryIdOf(created.id, eventId);

    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue: 'webhook-schedule',
      ...workflowCode(),
      activities: createWebhookActivities(services),
    });
    const since = Date.now();
    const outcome = await worker.runUntil(
      env.client.workflow.execute(webhookDeliveryWorkflow, { workflowId: `webhook-delivery:${deliveryId}:0`, taskQueue: 'webhook-schedule', args: [{ deliveryId, endpointId: created.id, organisationId: own.organisationId, generation: 0, since }] }),
    );
    expect(outcome).toBe('delivered');

    const requests = receiver.received('/flaky');
    expect(requests).toHaveLength(4);
    expect(new Set(requests.map((entry) => entry.headers['webhook-id']))).toEqual(new Set([eventId]));
    for (const entry of requests) expect(verified(created.secret, entry).data).toEqual({ flaky: true });
    const attempts = await api.db('webhook_attempts').where({ delivery_id: deliveryId }).orderBy('attempt');
    expect(attempts.map((attempt) => [attempt.attempt, attempt.status_code])).toEqual([
      [1, 500],
      [2, 500],
      [3, 500],
      [4, 200],
    ]);
    // Each attempt at its offset from the event, on the server's (skipped) clock.
    const history = await env.client.workflow.getHandle(`webhook-delivery:${deliveryId}:0`).fetchHistory();
    const scheduled = (history.events ?? []).filter((event) => event.activityTaskScheduledEventAttributes).map((event) => Number(event.eventTime!.seconds) * 1000 + Math.floor((event.eventTime!.nanos ?? 0) / 1e6));
    scheduled.forEach((at, index) => {
      expect(at - since).toBeGreaterThanOrEqual(WEBHOOK_ATTEMPT_OFFSETS_MS[index]! - 1000);
      expect(at - since).toBeLessThan(WEBHOOK_ATTEMPT_OFFSETS_MS[index]! + 5000);
    });
    const delivery = await api.db('webhook_deliveries').where({ id: deliveryId }).first();
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 4, last_status_code: 200 });
  });
});
