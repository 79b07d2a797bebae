import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createCustomerEntity } from './support/fixtures';

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'objects');
  other = await createTenant(api, 'objects-other');
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);

describe('jobs', () => {
  it('when a client job is created, advanced and deleted, then each step shows; another organisation gets 404', async () => {
    const created = await api.http().post('/jobs').set(system()).send({ type: 'crm-sync', total: 10 });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ type: 'crm-sync', status: 'queued', progress: { done: 0, total: 10 } });
    const id = created.body.data.id;
    const updated = await api.http().put(`/jobs/${id}`).set(system()).send({ status: 'running', done: 4 });
    expect(updated.body.data).toMatchObject({ status: 'running', progress: { done: 4, total: 10 } });
    // Progress never passes the total; a job that ended stays ended.
    const beyond = await api.http().put(`/jobs/${id}`).set(system()).send({ done: 11 });
    expect([beyond.status, beyond.body.errors?.[0]?.path]).toEqual([400, 'body.done']);
    await api.http().put(`/jobs/${id}`).set(system()).send({ status: 'completed', done: 10 }).expect(200);
    const reopened = await api.http().put(`/jobs/${id}`).set(system()).send({ status: 'running' });
    expect([reopened.status, reopened.body.errors?.[0]?.message]).toEqual([409, 'The job is completed; a job that ended does not change its status']);
    await api.http().get(`/jobs/${id}`).set(bearer(other.systemToken)).expect(404);
    const listed = await api.http().get('/jobs').query({ type: 'crm-sync' }).set(system());
    expect(listed.body.data.items.map((job: { id: string }) => job.id)).toEqual([id]);
    await api.http().delete(`/jobs/${id}`).set(system()).expect(200);
    await api.http().get(`/jobs/${id}`).set(system()).expect(404);
  });
});

describe('objects', () => {
  it('when a schema is asked for, then it lists queryable fields, relations and the JSON schema; an unknown object is 404', async () => {
    const res = await api.http().get('/objects/schema/entities').set(system());
    expect(res.status).toBe(200);
    expect(res.body.data.queryableFields).toEqual(expect.arrayContaining([{ name: 'customerId', type: 'string' }]));
    expect(res.body.data.relations).toEqual([{ field: 'customerId', object: 'customers' }]);
    expect(res.body.data.jsonSchema.properties).toHaveProperty('identifier');
    await api.http().get('/objects/schema/passwords').set(system()).expect(404);
    // Names every object map has by inheritance are no object of ours either.
    for (const inherited of ['constructor', '__proto__', 'toString']) await api.http().get(`/objects/schema/${inherited}`).set(system()).expect(404);
  });

  it('when objects are queried with filters, sort and paging, then only matching rows of the organisation come back', async () => {
    for (const [name, email] of [['Alpha Ltd', 'a@alpha.test'], ['Beta GmbH', 'b@beta.test'], ['Alpine SA', null]]) {
      await api.http().post('/customers').set(system()).send({ name, ...(email ? { email } : {}) }).expect(201);
    }
    await api.http().post('/customers').set(bearer(other.systemToken)).send({ name: 'Alpha Foreign' }).expect(201);
    const res = await api
      .http()
      .post('/objects/query')
      .set(system())
      .send({ object: 'customers', filter: [{ field: 'name', op: 'contains', value: 'alp' }], sort: [{ field: 'name', direction: 'desc' }], limit: 1 });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ total: 2, page: 1, limit: 1, items: [{ name: 'Alpine SA' }] });
    const noEmail = await api.http().post('/objects/query').set(system()).send({ object: 'customers', filter: [{ field: 'email', op: 'isNull', value: true }] });
    expect(noEmail.body.data.items.map((c: { name: string }) => c.name)).toEqual(['Alpine SA']);
  });

  it('when a query names an unknown field or a bad operator, then 400 with the path', async () => {
    const res = await api.http().post('/objects/query').set(system()).send({ object: 'customers', filter: [{ field: 'organisation_id', op: 'eq', value: other.organisationId }] });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ code: 1001, path: 'body.filter.0.field' });
    const op = await api.http().post('/objects/query').set(system()).send({ object: 'customers', filter: [{ field: 'name', op: 'like', value: '%' }] });
    expect(op.status).toBe(400);
  });

  it('when a query or an export names __proto__ or constructor, then 400 with the path, never a server error', async () => {
    for (const field of ['__proto__', 'constructor']) {
      const query = await api.http().post('/objects/query').set(system()).send({ object: 'invoices', filter: [{ field, op: 'eq', value: 'x' }] });
      expect(query.status).toBe(400);
      expect(query.body.errors[0]).toMatchObject({ code: 1001, path: 'body.filter.0.field' });
      const sorted = await api.http().post('/objects/query').set(system()).send({ object: 'invoices', sort: [{ field }] });
      expect(sorted.status).toBe(400);
      expect(sorted.body.errors[0]).toMatchObject({ path: 'body.sort.0.field' });
      const exported = await api.http().post('/objects/export').set(system()).send({ object: 'invoices', filter: [{ field, op: 'eq', value: 'x' }] });
      expect(exported.status).toBe(400);
      expect(exported.body.errors[0]).toMatchObject({ path: 'body.filter.0.field' });
    }
  });

  it('when 100,000 rows are exported, then the job shows progress while it runs and the CSV holds every row', async () => {
    const { entityId } = await createCustomerEntity(api, tenant);
    await api.db.raw(
      `INSERT INTO usage_events (id, organisation_id, customer_entity_id, metric, value, "timestamp", event_id)
       SELECT 'evt_export_' || lpad(n::text, 6, '0'), ?, ?, 'exported', n, timestamp '2026-11-01' + n * interval '1 second', 'export-' || n
       FROM generate_series(1, 100000) AS n`,
      [tenant.organisationId, entityId],
    );
    const started = await api.http().post('/objects/export').set(system()).send({ object: 'usage-events', filter: [{ field: 'metric', op: 'eq', value: 'exported' }] });
    expect(started.status).toBe(201);
    const jobId = started.body.data.id;
    expect(started.body.data).toMatchObject({ type: 'export', workflowId: `export:${jobId}` });

    const seen: Array<{ status: string; done: number; total: number | null }> = [];
    const deadline = Date.now() + 120_000;
    for (;;) {
      const job = (await api.http().get(`/jobs/${jobId}`).set(system())).body.data;
      seen.push({ status: job.status, ...job.progress });
      if (job.status === 'completed' || job.status === 'failed' || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const last = (await api.http().get(`/jobs/${jobId}`).set(system())).body.data;
    expect(last).toMatchObject({ status: 'completed', progress: { done: 100_000, total: 100_000 }, result: { rows: 100_000, downloadUrl: `/jobs/${jobId}/file` } });
    expect(seen.some((s) => s.status === 'running' && s.done > 0 && s.done < 100_000 && s.total === 100_000)).toBe(true);

    const file = await api.http().get(`/jobs/${jobId}/file`).set(system());
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toMatch(/^text\/csv/);
    const lines = file.text.trimEnd().split('\r\n');
    expect(lines).toHaveLength(100_001);
    expect(lines[0]).toBe('id,createdAt,CustomerEntityId,metric,value,timestamp,eventId,jobId,batchId');
    expect(lines[42]).toMatch(new RegExp(`^evt_export_000042,[^,]+,${entityId},exported,42\\.0+,2026-11-01T00:00:42.000Z,export-42,,$`));
  });

  it('when the export is not done, then its file answers 409; another organisation sees no job', async () => {
    const job = await api.http().post('/jobs').set(system()).send({ type: 'export' });
    await api.http().get(`/jobs/${job.body.data.id}/file`).set(system()).expect(409);
    await api.http().get(`/jobs/${job.body.data.id}/file`).set(bearer(other.systemToken)).expect(404);
  });
});
