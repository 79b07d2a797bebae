import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createCustomerEntity, usageEvent } from './support/fixtures';
import { recordHistory } from './support/record-history';
import { waitFor } from '../support/wait';

let api: TestApi;
let tenant: Tenant;
let entityId: string;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'usage');
  ({ entityId } = await createCustomerEntity(api, tenant));
});
afterAll(() => api.close());

const postBatch = (events: unknown[], token = tenant.systemToken) =>
  api.http().post('/events/batch').set(bearer(token)).send({ events });

/** The summary of a batch that answered 202, once it has completed. */
const completedSummary = (batchId: string) =>
  waitFor(async () => {
    const read = await api.http().get(`/events/batches/${batchId}`).set(bearer(tenant.systemToken)).expect(200);
    return read.body.data.status === 'completed' ? (read.body.data.summary as { success: number; failed: number; total: number; duplicates: number }) : undefined;
  }, 60_000);

const storedCount = async (organisationId: string, prefix: string) =>
  Number((await api.db('usage_events').where({ organisation_id: organisationId }).whereLike('event_id', `${prefix}%`).count({ n: '*' }))[0]!.n);

describe('POST /events/batch', () => {
  it('when every event is valid, then all succeed and are stored', async () => {
    const prefix = randomUUID();
    const res = await postBatch([usageEvent(entityId, { eventId: `${prefix}-1` }), usageEvent(entityId, { eventId: `${prefix}-2`, value: '2.5' })]);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('success');
    expect(res.body.data.summary).toEqual({ success: 2, failed: 0, total: 2, duplicates: 0 });
    expect(res.body.data.failedRecords).toEqual([]);
    expect(await storedCount(tenant.organisationId, prefix)).toBe(2);
    // An id of only spaces is no id and no key either: that event fails alone; an empty one is no id.
    const blank = await postBatch([usageEvent(entityId, { eventId: '   ' }), usageEvent(entityId, { eventId: '' }), usageEvent(entityId, { eventId: '' })]);
    expect(blank.body.data.summary).toEqual({ success: 2, failed: 1, total: 3, duplicates: 0 });
    expect(blank.body.data.failedRecords).toEqual([expect.objectContaining({ index: 0, error: expect.stringContaining('eventId must not be only spaces') })]);
  });

  it('when an event names an unknown customer entity, then it fails with 404 and the integer 2002, and the rest are processed (rules 1 and 3)', async () => {
    const prefix = randomUUID();
    const res = await postBatch([
      usageEvent(entityId, { eventId: `${prefix}-a` }),
      usageEvent('ent_does_not_exist', { eventId: `${prefix}-b` }),
      usageEvent(entityId, { eventId: `${prefix}-c` }),
    ]);
    expect(res.status).toBe(200);
    expect(res.body.data.summary).toEqual({ success: 2, failed: 1, total: 3, duplicates: 0 });
    expect(res.body.data.failedRecords).toEqual([{ index: 1, error: 'customer entity not found', code: 2002, statusCode: 404 }]);
    expect(await storedCount(tenant.organisationId, prefix)).toBe(2);
    // Sent alone, it is a 404 like any other: what it is about in the message, no path.
    const single = await api.http().post('/events').set(bearer(tenant.systemToken)).send(usageEvent('ent_does_not_exist'));
    expect([single.status, single.body.errors]).toEqual([404, [{ code: 2002, message: 'customer entity not found' }]]);
  });

  it('when an event has an unparsable timestamp, then it fails with 400 and the string "27" (rule 2)', async () => {
    const prefix = randomUUID();
    const res = await postBatch([usageEvent(entityId, { eventId: `${prefix}-a`, timestamp: 'yesterday' }), usageEvent(entityId, { eventId: `${prefix}-b` })]);
    expect(res.body.data.failedRecords).toEqual([{ index: 0, error: expect.stringContaining('timestamp'), code: '27', statusCode: 400 }]);
    expect(res.body.data.summary).toMatchObject({ success: 1, failed: 1 });
  });

  it('when events hold what the event table cannot store, then each fails on its own with "27" and its reason, and the batch answers at once', async () => {
    const prefix = randomUUID();
    const started = Date.now();
    const res = await postBatch([
      usageEvent(entityId, { eventId: `${prefix}-ok-1` }),
      usageEvent(entityId, { eventId: `${prefix}-huge`, value: 1e25 }),
      usageEvent(entityId, { eventId: `${prefix}-tiny`, value: 1e-11 }),
      usageEvent(entityId, { eventId: `${prefix}-far`, timestamp: '9999-12-31T23:59:59-14:00' }),
      usageEvent(entityId, { eventId: `${prefix}-ok-2` }),
    ]);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(res.status).toBe(200);
    expect(res.body.data.summary).toEqual({ success: 2, failed: 3, total: 5, duplicates: 0 });
    expect(res.body.data.failedRecords).toEqual([
      { index: 1, error: 'value must have at most 20 digits before the decimal point', code: '27', statusCode: 400 },
      { index: 2, error: 'value must have at most 10 decimal places', code: '27', statusCode: 400 },
      { index: 3, error: 'timestamp must fall in the years 1 to 9999 (UTC)', code: '27', statusCode: 400 },
    ]);
    expect(await storedCount(tenant.organisationId, prefix)).toBe(2);
  });

  it.each([
    ['a missing metric', { CustomerEntityId: 'x', value: 1, timestamp: '2026-11-01T00:00:00Z' }],
    ['a non-numeric value', { CustomerEntityId: 'x', metric: 'm', value: 'lots', timestamp: '2026-11-01T00:00:00Z' }],
    ['a missing timestamp', { CustomerEntityId: 'x', metric: 'm', value: 1 }],
    ['an impossible date', { CustomerEntityId: 'x', metric: 'm', value: 1, timestamp: '2026-02-30T00:00:00Z' }],
    ['not an object', 42],
  ])('when an event has %s, then it fails with "27"', async (_label, event) => {
    const res = await postBatch([event]);
    expect(res.body.data.failedRecords).toEqual([expect.objectContaining({ index: 0, code: '27', statusCode: 400 })]);
  });

  it('when jobId or JobId is given, then either fills the job', async () => {
    const prefix = randomUUID();
    await postBatch([
      { ...usageEvent(entityId, { eventId: `${prefix}-lower` }), jobId: 'job-lower' },
      { ...usageEvent(entityId, { eventId: `${prefix}-upper` }), JobId: 'job-upper' },
    ]).expect(200);
    const rows = await api.db('usage_events').whereLike('event_id', `${prefix}%`).orderBy('event_id').select('event_id', 'job_id');
    expect(rows.map((row) => row.job_id)).toEqual(['job-lower', 'job-upper']);
  });

  it('when an eventId repeats inside one batch and across batches, then it is stored once and counts as a duplicate success', async () => {
    const prefix = randomUUID();
    const batch = [usageEvent(entityId, { eventId: `${prefix}-1` }), usageEvent(entityId, { eventId: `${prefix}-1` }), usageEvent(entityId, { eventId: `${prefix}-2` })];
    const first = await postBatch(batch);
    expect(first.body.data.summary).toEqual({ success: 3, failed: 0, total: 3, duplicates: 1 });
    const again = await postBatch(batch);
    expect(again.body.data.summary).toEqual({ success: 3, failed: 0, total: 3, duplicates: 3 });
    expect(await storedCount(tenant.organisationId, prefix)).toBe(2);
  });

  it('when a batch of 2,500 events spans three chunks, then failures keep their original indexes', async () => {
    const prefix = randomUUID();
    const events = Array.from({ length: 2500 }, (_, i) =>
      i % 500 === 7 ? usageEvent('ent_unknown', { eventId: `${prefix}-${i}` }) : usageEvent(entityId, { eventId: `${prefix}-${i}`, value: i }),
    );
    const res = await postBatch(events);
    expect(res.body.data.summary).toEqual({ success: 2495, failed: 5, total: 2500, duplicates: 0 });
    expect(res.body.data.failedRecords.map((record: { index: number }) => record.index).sort((a: number, b: number) => a - b)).toEqual([7, 507, 1007, 1507, 2007]);
    expect(await storedCount(tenant.organisationId, prefix)).toBe(2495);
    const batch = await api.http().get(`/events/batches/${res.body.data.batchId}`).set(bearer(tenant.systemToken)).expect(200);
    expect(batch.body.data).toMatchObject({ status: 'completed', total: 2500, summary: res.body.data.summary });
    expect(batch.body.data.failedRecords).toHaveLength(5);
    await recordHistory(api, `usage-group:${res.body.data.batchId}`, 'usage-group-three-chunks');
    await recordHistory(api, `usage-ingestion:${tenant.organisationId}`, 'usage-ingestion-open');
  });

  it('when more events fail than the workflow answers inline, then every failed record is answered all the same, in index order', async () => {
    const prefix = randomUUID();
    // 1,500 failures: past what a group's result carries, so the answer reads them from the chunks.
    const events = Array.from({ length: 2000 }, (_, i) => (i % 4 === 0 ? usageEvent(entityId, { eventId: `${prefix}-${i}` }) : usageEvent('ent_unknown', { eventId: `${prefix}-${i}` })));
    const res = await postBatch(events);
    expect(res.status).toBe(200);
    expect(res.body.data.summary).toEqual({ success: 500, failed: 1500, total: 2000, duplicates: 0 });
    const indexes = res.body.data.failedRecords.map((record: { index: number }) => record.index);
    expect(indexes).toEqual(Array.from({ length: 2000 }, (_, i) => i).filter((i) => i % 4 !== 0));
    expect(res.body.data.failedRecords[0]).toEqual({ index: 1, code: 2002, statusCode: 404, error: 'customer entity not found' });
  });

  it('when a batch holds 10,001 events, then 413 in the error envelope', async () => {
    const events = Array.from({ length: 10_001 }, () => ({ CustomerEntityId: 'e', metric: 'm', value: 1, timestamp: '2026-11-01T00:00:00Z' }));
    const res = await postBatch(events);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ status: 'error', errors: [{ code: 1005 }] });
  });

  it('when the body is larger than 5 MB, then 413', async () => {
    const padding = 'x'.repeat(1000);
    const events = Array.from({ length: 5500 }, () => ({ ...usageEvent(entityId), metadata: { padding } }));
    const res = await postBatch(events);
    expect(res.status).toBe(413);
  });

  it("when an event names another organisation's entity, then 2002", async () => {
    const other = await createTenant(api, 'usage-other');
    const { entityId: foreignEntity } = await createCustomerEntity(api, other);
    const res = await postBatch([usageEvent(foreignEntity, { eventId: randomUUID() })]);
    expect(res.body.data.failedRecords).toEqual([expect.objectContaining({ index: 0, code: 2002, statusCode: 404 })]);
  });

  it('when the events field is not an array, then 400', async () => {
    const res = await api.http().post('/events/batch').set(bearer(tenant.systemToken)).send({ events: 'no' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ code: 1001, path: 'body.events' });
  });

  it('when 20 identical 1,000-event batches are posted at once, then exactly 1,000 rows are stored', async () => {
    const prefix = randomUUID();
    const events = Array.from({ length: 1000 }, (_, i) => usageEvent(entityId, { eventId: `${prefix}-${i}` }));
    const responses = await Promise.all(Array.from({ length: 20 }, () => postBatch(events)));
    // A batch not written within the synchronous wait (a machine busy with 20,000 events at once) answers
    // 202 with its id, as documented; its outcome is then read from the batch.
    const summaries: Array<{ duplicates: number }> = [];
    for (const res of responses) {
      expect([200, 202]).toContain(res.status);
      summaries.push(res.status === 200 ? res.body.data.summary : await completedSummary(res.body.data.id));
    }
    for (const summary of summaries) expect(summary).toMatchObject({ success: 1000, failed: 0, total: 1000 });
    const duplicates = summaries.reduce((sum, summary) => sum + summary.duplicates, 0);
    expect(duplicates).toBe(19 * 1000);
    expect(await storedCount(tenant.organisationId, prefix)).toBe(1000);
  });

  it('when the same Idempotency-Key is sent twice, then the second answer is the first batch', async () => {
    const key = randomUUID();
    const events = [usageEvent(entityId)];
    const first = await api.http().post('/events/batch').set(bearer(tenant.systemToken)).set('Idempotency-Key', key).send({ events });
    const second = await api.http().post('/events/batch').set(bearer(tenant.systemToken)).set('Idempotency-Key', key).send({ events });
    expect(second.body.data).toEqual(first.body.data);
    expect(Number((await api.db('usage_events').where({ batch_id: first.body.data.batchId }).count({ n: '*' }))[0]!.n)).toBe(1);
  });

  it('when an Idempotency-Key is sent again with other events, on another route or after the replay store forgot it, then 409 and none of them is stored', async () => {
    const key = randomUUID();
    const prefix = randomUUID();
    const events = [usageEvent(entityId, { eventId: `${prefix}-a` })];
    const first = await api.http().post('/events/batch').set(bearer(tenant.systemToken)).set('Idempotency-Key', key).send({ events }).expect(200);
    const others = [usageEvent(entityId, { eventId: `${prefix}-b` }), usageEvent(entityId, { eventId: `${prefix}-c` })];

    const elsewhere = await api.http().post('/usage/bulk').set(bearer(tenant.systemToken)).set('Idempotency-Key', key).send({ events: others });
    // A 409 names no path, as every conflict of a key does.
    expect([elsewhere.status, elsewhere.body.errors]).toEqual([409, [{ code: 1003, path: 'headers.idempotency-key', message: `This Idempotency-Key was already used for batch ${first.body.data.batchId}, of other events; use a new key for a new batch` }]]);
    // The replay store keeps a key 24 hours; the batch keeps it for good.
    await api.db('idempotency_keys').where({ organisation_id: tenant.organisationId }).delete();
    await api.http().post('/events/batch').set(bearer(tenant.systemToken)).set('Idempotency-Key', key).send({ events: others }).expect(409);
    expect(await storedCount(tenant.organisationId, prefix)).toBe(1);
    // The same events under the key, on either route, are still the first batch: their keys in another
    // order too, and the one event sent alone to POST /events.
    const reordered = events.map((event) => Object.fromEntries(Object.entries(event).reverse()));
    const same = await api.http().post('/usage/bulk').set(bearer(tenant.systemToken)).set('Idempotency-Key', key).send({ events: reordered }).expect(200);
    expect(same.body.data).toEqual(first.body.data);
    const alone = await api.http().post('/events').set(bearer(tenant.systemToken)).set('Idempotency-Key', key).send(events[0]).expect(201);
    expect(alone.body.data.batchId).toBe(first.body.data.batchId);
  });
});

describe('a chunk that meets another writer', () => {
  it('when a chunk transaction fails on a unique violation (another worker writing the same rows), then the group is tried again and the batch completes with every event stored once, not failed with part of it', async () => {
    // Its own organisation: the staged violation fires for its rows alone. A meter makes each chunk record
    // itself for the organisation-wide totals, whose key a stalled worker's chunk can meet.
    const own = await createTenant(api, 'usage-race');
    const { entityId: ownEntity } = await createCustomerEntity(api, own);
    await api.http().post('/meters').set(bearer(own.adminToken)).send({ name: 'Calls', metric: 'api_calls', aggregation: 'sum' }).expect(201);
    const tag = `race_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    await api.db.raw(`CREATE SEQUENCE ${tag}`);
    await api.db.raw(
      `CREATE FUNCTION ${tag}() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.organisation_id = '${own.organisationId}' AND nextval('${tag}') = 1 THEN
           RAISE unique_violation USING MESSAGE = 'duplicate key value violates unique constraint "meter_totals_pending_pkey"';
         END IF;
         RETURN NEW;
       END $$`,
    );
    await api.db.raw(`CREATE TRIGGER ${tag} BEFORE INSERT ON meter_totals_pending FOR EACH ROW EXECUTE FUNCTION ${tag}()`);
    try {
      const prefix = randomUUID();
      const events = Array.from({ length: 5 }, (_, i) => usageEvent(ownEntity, { eventId: `${prefix}-${i}` }));
      const res = await api.http().post('/events/batch').set(bearer(own.systemToken)).send({ events });
      expect([200, 202]).toContain(res.status);
      const batchId = (res.body.data.batchId ?? res.body.data.id) as string;
      const summary = await waitFor(async () => {
        const read = await api.http().get(`/events/batches/${batchId}`).set(bearer(own.systemToken)).expect(200);
        return read.body.data.status === 'processing' ? undefined : { status: read.body.data.status as string, summary: read.body.data.summary };
      }, 60_000);
      expect(summary).toEqual({ status: 'completed', summary: { success: 5, failed: 0, total: 5, duplicates: 0 } });
      expect(await storedCount(own.organisationId, prefix)).toBe(5);
      // The violation was met once, and the chunk written on the next try.
      expect(Number((await api.db.raw(`SELECT last_value FROM ${tag}`)).rows[0].last_value)).toBeGreaterThanOrEqual(2);
    } finally {
      await api.db.raw(`DROP TRIGGER IF EXISTS ${tag} ON meter_totals_pending`);
      await api.db.raw(`DROP FUNCTION IF EXISTS ${tag}()`);
      await api.db.raw(`DROP SEQUENCE IF EXISTS ${tag}`);
    }
  });
});

describe('GET /events/{id}', () => {
  it('when the event exists, then it is returned; from another organisation, 404', async () => {
    const eventId = randomUUID();
    await postBatch([usageEvent(entityId, { eventId, value: '3.25', metadata: { region: 'eu' } })]).expect(200);
    const row = await api.db('usage_events').where({ event_id: eventId }).first();
    const res = await api.http().get(`/events/${row.id}`).set(bearer(tenant.systemToken));
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: row.id, CustomerEntityId: entityId, eventId, metadata: { region: 'eu' } });
    expect(Number(res.body.data.value)).toBe(3.25);
    const other = await createTenant(api, 'events-other');
    await api.http().get(`/events/${row.id}`).set(bearer(other.systemToken)).expect(404);
  });

  it('when ids, metrics and metadata hold quotes, backslashes, braces, commas, "NULL" and emoji, then each reads back exactly as sent', async () => {
    const awkward = `a"b\\c{d},e 'f' NULL \\N \t 😀`;
    const eventId = `${randomUUID()}-${awkward}`;
    const metadata = { text: awkward, NULL: 'NULL', nested: { list: [1, null, '{"x":1}', awkward] }, empty: '' };
    const res = await postBatch([
      usageEvent(entityId, { eventId, metric: `m,${awkward}`.slice(0, 255), value: '0.0000000001', metadata }),
      usageEvent(entityId, { eventId: `${eventId}-plain` }),
    ]).expect(200);
    expect(res.body.data.summary).toEqual({ success: 2, failed: 0, total: 2, duplicates: 0 });
    const row = await api.db('usage_events').where({ organisation_id: tenant.organisationId, event_id: eventId }).first();
    const read = await api.http().get(`/events/${row.id}`).set(bearer(tenant.systemToken)).expect(200);
    expect(read.body.data).toMatchObject({ eventId, metric: `m,${awkward}`, metadata, value: '0.0000000001' });
    const plain = await api.db('usage_events').where({ organisation_id: tenant.organisationId, event_id: `${eventId}-plain` }).first();
    expect(plain.metadata).toBeNull();
  });
});
