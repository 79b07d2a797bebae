import type { Request } from 'express';
import knex from 'knex';
import { requestFingerprint } from '../../src/http/idempotency';
import { createIdempotencyService } from '../../src/modules/idempotency';
import { createSecretBox } from '../../src/security/secret-box';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody, type BillingFixture } from './support/billing-fixtures';
import { createCustomerEntity, usageEvent } from './support/fixtures';

let api: TestApi;
let tenant: Tenant;
let fixture: BillingFixture;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'idempotency');
  fixture = await createBillingFixture(api, tenant);
});
afterAll(() => api.close());

const auth = () => bearer(tenant.systemToken);
const paidAt = '2026-11-20T10:00:00Z';

describe('Idempotency-Key on state-changing requests', () => {
  it('when a create is retried with the same key and body, then the first answer comes back and one row exists', async () => {
    const body = { name: 'Idempotent Customer', currency: 'USD' };
    const first = await api.http().post('/customers').set(auth()).set('Idempotency-Key', 'customer-1').send(body);
    const second = await api.http().post('/customers').set(auth()).set('Idempotency-Key', 'customer-1').send(body);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(await api.db('customers').where({ organisation_id: tenant.organisationId, name: body.name }).count({ n: '*' })).toEqual([{ n: '1' }]);
  });

  it('when the same key comes with another body, then 409 and nothing is created', async () => {
    await api.http().post('/customers').set(auth()).set('Idempotency-Key', 'customer-2').send({ name: 'Second A', currency: 'USD' }).expect(201);
    const other = await api.http().post('/customers').set(auth()).set('Idempotency-Key', 'customer-2').send({ name: 'Second B', currency: 'USD' });
    expect(other.status).toBe(409);
    expect(other.body.errors[0]).toMatchObject({ code: 1003 });
    expect(await api.db('customers').where({ organisation_id: tenant.organisationId, name: 'Second B' }).count({ n: '*' })).toEqual([{ n: '0' }]);
  });

  it('when a usage batch is retried with its key but other events, then 409 and the other events are not stored', async () => {
    const { entityId } = await createCustomerEntity(api, tenant);
    const first = [usageEvent(entityId, { eventId: 'idem-batch-a' })];
    const res = await api.http().post('/events/batch').set(auth()).set('Idempotency-Key', 'batch-1').send({ events: first });
    expect(res.status).toBe(200);
    const changed = await api.http().post('/events/batch').set(auth()).set('Idempotency-Key', 'batch-1').send({ events: [usageEvent(entityId, { eventId: 'idem-batch-b' })] });
    expect(changed.status).toBe(409);
    const stored = await api.db('usage_events').where({ organisation_id: tenant.organisationId }).whereIn('event_id', ['idem-batch-a', 'idem-batch-b']).pluck('event_id');
    expect(stored).toEqual(['idem-batch-a']);
  });

  it('when keys are equal on two routes or in two organisations, then each is its own key', async () => {
    const other = await createTenant(api, 'idempotency-other');
    await api.http().post('/customers').set(auth()).set('Idempotency-Key', 'shared-key').send({ name: 'Org one', currency: 'USD' }).expect(201);
    await api.http().post('/customers').set(bearer(other.systemToken)).set('Idempotency-Key', 'shared-key').send({ name: 'Org two', currency: 'USD' }).expect(201);
    const contactGroup = await api
      .http()
      .post('/contact-groups')
      .set(auth())
      .set('Idempotency-Key', 'shared-key')
      .send({ customerId: fixture.customerId, name: 'Other route', contacts: [{ name: 'A', email: 'a@example.com' }] });
    expect(contactGroup.status).toBe(201);
  });

  it("when one key is sent on an invoice's raise, send and mark-paid, then each step runs: a key is its route's, never another step's answer", async () => {
    const invoice = await api.http().post('/invoices').set(auth()).send(invoiceBody(fixture.contractPlanId)).expect(201);
    const id = invoice.body.data.id as string;
    const raised = await api.http().post(`/invoices/${id}/raise`).set(auth()).set('Idempotency-Key', `steps-${id}`).send({}).expect(200);
    expect(raised.body.data.status).toBe('raised');
    const sent = await api.http().post(`/invoices/${id}/send`).set(auth()).set('Idempotency-Key', `steps-${id}`).send({}).expect(200);
    expect([sent.headers['idempotent-replayed'], sent.body.data.status]).toEqual([undefined, 'sent']);
    const paid = await api.http().post(`/invoices/${id}/mark-paid`).set(auth()).set('Idempotency-Key', `steps-${id}`).send({ paidDate: '2026-11-21' }).expect(200);
    expect([paid.headers['idempotent-replayed'], paid.body.data.status]).toEqual([undefined, 'paid']);
    expect(await api.db('payments').where({ invoice_id: id }).count({ n: '*' })).toEqual([{ n: '1' }]);
    // The mark-paid retried with its key is its own answer again, and pays nothing twice.
    const again = await api.http().post(`/invoices/${id}/mark-paid`).set(auth()).set('Idempotency-Key', `steps-${id}`).send({ paidDate: '2026-11-21' }).expect(200);
    expect([again.headers['idempotent-replayed'], again.body]).toEqual(['true', paid.body]);
    expect(await api.db('payments').where({ invoice_id: id }).count({ n: '*' })).toEqual([{ n: '1' }]);
  });

  it('when an invalid key is sent, then 400 names the header', async () => {
    const res = await api.http().post('/customers').set(auth()).set('Idempotency-Key', 'x'.repeat(256)).send({ name: 'Long key', currency: 'USD' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ path: 'headers.idempotency-key' });
  });

  it("when a client's payment uses the system's own key format, then the invoice's mark-paid still pays it, at once", async () => {
    const invoice = await api.http().post('/invoices').set(auth()).send(invoiceBody(fixture.contractPlanId)).expect(201);
    const id = invoice.body.data.id as string;
    await api.http().post(`/invoices/${id}/raise`).set(auth()).send({}).expect(200);
    await api.http().post(`/invoices/${id}/send`).set(auth()).send({}).expect(200);
    // Every Update so far had its own seq; the next one (mark-paid) would key its payment `invoice:<id>:3`.
    for (const seq of [1, 2, 3, 4, 5]) {
      await api
        .http()
        .post('/payments')
        .set(auth())
        .set('Idempotency-Key', `invoice:${id}:${seq}`)
        .send({ customerId: fixture.customerId, amount: '1.00', currency: 'USD', paidAt })
        .expect(201);
    }
    const started = Date.now();
    const paid = await api.http().post(`/invoices/${id}/mark-paid`).set(auth()).send({ paidDate: '2026-11-21' });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(paid.status).toBe(200);
    expect(paid.body.data.status).toBe('paid');
    const payments = await api.db('payments').where({ invoice_id: id }).select('idempotency_scope');
    expect(payments).toEqual([{ idempotency_scope: 'system' }]);
  });

  it('when the run holding a key died before answering, then a retry with the same request runs and its answer is kept', async () => {
    const body = { name: 'After crash', currency: 'USD' };
    // A run whose process died before it answered: its lease has lapsed.
    await api.db('idempotency_keys').insert({
      organisation_id: tenant.organisationId,
      route: 'POST /customers',
      key: 'crashed-run',
      fingerprint: requestFingerprint({ params: {}, query: {}, body } as unknown as Request),
      state: 'running',
      locked_until: new Date(Date.now() - 1000),
    });
    const res = await api.http().post('/customers').set(auth()).set('Idempotency-Key', 'crashed-run').send(body);
    expect(res.status).toBe(201);
    expect(await api.db('idempotency_keys').where({ key: 'crashed-run' }).first()).toMatchObject({ state: 'done', response_status: 201 });
  });

  it('when a first request is still running, then a retry with the key answers 409 at once instead of running twice', async () => {
    const body = { name: 'Busy', currency: 'USD' };
    // The fingerprint of the very request sent below, held by a run that has not answered yet.
    const fingerprint = requestFingerprint({ params: {}, query: {}, body } as unknown as Request);
    await api.db('idempotency_keys').insert({
      organisation_id: tenant.organisationId,
      route: 'POST /customers',
      key: 'busy-run',
      fingerprint,
      state: 'running',
      locked_until: new Date(Date.now() + 60_000),
    });
    const probe = await api.http().post('/customers').set(auth()).set('Idempotency-Key', 'busy-run').send(body);
    expect(probe.status).toBe(409);
    expect(probe.body.errors[0].message).toMatch(/still in progress/);
    expect(await api.db('customers').where({ organisation_id: tenant.organisationId, name: 'Busy' }).count({ n: '*' })).toEqual([{ n: '0' }]);
  });
});

describe('a key taken while Postgres goes away', () => {
  it('when the statement that takes a key commits but its answer is lost, then that request fails, and its retry runs instead of meeting 409 until the lease lapses', async () => {
    // A real database whose answer to one statement is thrown away after it committed, as a connection cut
    // between the commit and its reply would.
    let loseNextAnswer = false;
    const db = knex({
      client: 'pg',
      connection: process.env.DATABASE_URL,
      pool: { min: 0, max: 2 },
      postProcessResponse: (result: unknown) => {
        if (!loseNextAnswer) return result;
        loseNextAnswer = false;
        throw new Error('Connection terminated unexpectedly');
      },
    });
    try {
      const service = createIdempotencyService(db, createSecretBox(process.env.SECRETS_KEY!));
      const other = { organisationId: tenant.organisationId, route: 'POST /probe', key: 'warm-up' };
      // A first key, so that the service's occasional clean-up of old keys has run and stays out of the way.
      const warm = await service.begin(other, 'f0');
      if (warm.run) await service.finish(other, 'f0', warm.runToken, 201, { ok: true });
      const ref = { organisationId: tenant.organisationId, route: 'POST /probe', key: 'lost-answer' };

      loseNextAnswer = true;
      await expect(service.begin(ref, 'f1')).rejects.toThrow('Connection terminated unexpectedly');
      expect(await db('idempotency_keys').where({ organisation_id: tenant.organisationId, route: 'POST /probe', key: 'lost-answer' }).first('state')).toEqual({ state: 'running' });

      const retry = await service.begin(ref, 'f1');
      expect(retry.run).toBe(true);
      if (retry.run) await service.finish(ref, 'f1', retry.runToken, 201, { created: 1 });
      expect(await service.begin(ref, 'f1')).toEqual({ run: false, status: 201, body: { created: 1 } });
    } finally {
      await db.destroy();
    }
  });
});
