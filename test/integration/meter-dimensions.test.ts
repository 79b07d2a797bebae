import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { waitForRun } from './support/billing-fixtures';
import { watched } from '../support/wait';

let api: TestApi;
let tenant: Tenant;
const admin = () => bearer(tenant.adminToken);
const system = () => bearer(tenant.systemToken);

const MODELS = ['small', 'large'];
const DIRECTIONS = ['input', 'output', 'cached'];
const PROJECTS = ['alpha', 'beta'];
/** Days of October 2026 around the end of summer time in Berlin (25 October: a 25-hour day). */
const FIRST = Date.parse('2026-10-22T00:00:00Z');
const SPAN_MS = 6 * 86_400_000;

interface Sent {
  customer: number;
  model: string;
  direction: string;
  cents: number;
  timestamp: string;
  project: string;
}

/** A seeded generator, so a failure repeats. */
function generator(seed: number) {
  let state = seed;
  // 15 good bits a step: the high ones of a linear congruential generator.
  const bits = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return Math.floor(state / 65536);
  };
  return (n: number) => (bits() * 32768 + bits()) % n;
}

/** Cents as an exact decimal without trailing zeros. */
function decimal(cents: number): string {
  const whole = Math.floor(cents / 100);
  const fraction = String(cents % 100).padStart(2, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : String(whole);
}

const dayIn = (timeZone: string, instant: string) => new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(instant));

function sums(events: Sent[], key: (event: Sent) => string): Map<string, string> {
  const cents = new Map<string, number>();
  for (const event of events) cents.set(key(event), (cents.get(key(event)) ?? 0) + event.cents);
  return new Map([...cents].map(([name, value]) => [name, decimal(value)]));
}

let meterId: string;
let metric: string;
const customers: Array<{ customerId: string; entityId: string }> = [];
const sent: Sent[] = [];

interface Row {
  windowStart: string;
  windowEnd: string;
  groups: Record<string, string | null>;
  value: string;
}

async function query(params: string, expected = 200) {
  const res = await api.http().get(`/meters/${meterId}/query?${params}`).set(system());
  expect(res.status).toBe(expected);
  return res.body;
}

/** Every row of the query, page by page. */
async function allRows(params: string): Promise<Row[]> {
  const rows: Row[] = [];
  for (let page = 1; ; page += 1) {
    const body = await query(`${params}&page=${page}&limit=50`);
    rows.push(...(body.data.rows as Row[]));
    if (page * 50 >= body.data.total) return rows;
  }
}

/** A run on `billingDate` for the one contract, which must complete without failures: the invoice it made. */
async function billedByRun(contractId: string, billingDate: string) {
  const started = await api.http().post('/invoice-runs').set(system()).send({ billingDate, contractIds: [contractId] }).expect(201);
  await waitForRun(api, tenant, started.body.data.id);
  const run = (await api.http().get(`/invoice-runs/${started.body.data.id}`).set(system()).expect(200)).body.data;
  expect(run).toMatchObject({ status: 'completed', failures: [] });
  const [invoice] = (await api.http().get('/invoices').query({ invoiceRunId: run.id }).set(system()).expect(200)).body.data.items;
  return (await api.http().get(`/invoices/${invoice.id}`).set(system()).expect(200)).body.data;
}

const RANGE = 'from=2026-10-22T00:00:00Z&to=2026-10-28T00:00:00Z';

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'meter-dimensions');
  for (let index = 0; index < 2; index += 1) {
    const customer = await api.http().post('/customers').set(system()).send({ name: `Tokens ${index} ${randomUUID()}`, currency: 'USD' }).expect(201);
    const entity = await api.http().post('/entities').set(system()).send({ type: 'customer', name: 'Entity', customerId: customer.body.data.id }).expect(201);
    customers.push({ customerId: customer.body.data.id, entityId: entity.body.data.id });
  }
  metric = `tokens_${randomUUID().slice(0, 8)}`;
  const meter = await api
    .http()
    .post('/meters')
    .set(admin())
    .send({ name: metric, metric, aggregation: 'sum', groupBy: ['model', 'direction'], filters: [{ key: 'direction', operator: 'in', values: ['input', 'output'] }] })
    .expect(201);
  meterId = meter.body.data.id;
  expect(meter.body.data).toMatchObject({ groupBy: ['model', 'direction'], filters: [{ key: 'direction', operator: 'in', values: ['input', 'output'] }] });
  const next = generator(42);
  // Projects from a generator of their own, so that the rest of each event is as before.
  const project = generator(7);
  for (let index = 0; index < 1000; index += 1) {
    sent.push({
      project: PROJECTS[project(2)]!,
      customer: next(2),
      model: MODELS[next(2)]!,
      direction: DIRECTIONS[next(3)]!,
      cents: 1 + next(100_000),
      timestamp: new Date(FIRST + next(SPAN_MS / 1000) * 1000).toISOString(),
    });
  }
  const events = sent.map((event) => ({
    CustomerEntityId: customers[event.customer]!.entityId,
    metric,
    value: decimal(event.cents),
    timestamp: event.timestamp,
    metadata: { model: event.model, direction: event.direction, project: event.project },
  }));
  const res = await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
  expect(res.body.data.summary).toMatchObject({ success: 1000, failed: 0 });
  // Every model, direction and customer is among the events, in numbers.
  for (const [pick, names] of [[(event: Sent) => event.model, MODELS], [(event: Sent) => event.direction, DIRECTIONS], [(event: Sent) => String(event.customer), ['0', '1']]] as const) {
    for (const name of names) expect(sent.filter((event) => pick(event) === name).length).toBeGreaterThan(100);
  }
});
afterAll(() => api.close());

const counted = () => sent.filter((event) => event.direction !== 'cached');

describe('a meter of AI tokens by model and direction', () => {
  it('when queried per model per UTC day, then each row is the sum of the counted events sent', async () => {
    const rows = await allRows(`${RANGE}&groupBy=model&timezone=UTC`);
    const expected = sums(counted(), (event) => `${event.timestamp.slice(0, 10)}T00:00:00.000Z|${event.model}`);
    expect(new Map(rows.map((row) => [`${row.windowStart}|${row.groups.model}`, row.value]))).toEqual(expected);
    expect(new Set(rows.map((row) => row.windowStart)).size).toBe(6);
    expect(rows.every((row) => Date.parse(row.windowEnd) - Date.parse(row.windowStart) === 86_400_000)).toBe(true);
    expect(rows.map((row) => `${row.windowStart}|${row.groups.model}`)).toEqual([...expected.keys()].sort());
  });

  it('when queried per model and direction, then the cached direction is absent and each sum matches', async () => {
    const rows = await allRows(`${RANGE}&groupBy=model,direction&timezone=UTC`);
    expect(rows.some((row) => row.groups.direction === 'cached')).toBe(false);
    const expected = sums(counted(), (event) => `${event.timestamp.slice(0, 10)}|${event.model}|${event.direction}`);
    expect(new Map(rows.map((row) => [`${row.windowStart.slice(0, 10)}|${row.groups.model}|${row.groups.direction}`, row.value]))).toEqual(expected);
  });

  it('when split by customer, then each customer gets the sum of its own events', async () => {
    const rows = await allRows(`${RANGE}&groupBy=customer&groupBy=model&timezone=UTC`);
    const expected = sums(counted(), (event) => `${event.timestamp.slice(0, 10)}|${event.model}|${customers[event.customer]!.customerId}`);
    expect(new Map(rows.map((row) => [`${row.windowStart.slice(0, 10)}|${row.groups.model}|${row.groups.customer}`, row.value]))).toEqual(expected);
    const one = await allRows(`${RANGE}&timezone=UTC&customerId=${customers[0]!.customerId}`);
    expect(new Map(one.map((row) => [row.windowStart.slice(0, 10), row.value]))).toEqual(sums(counted().filter((event) => event.customer === 0), (event) => event.timestamp.slice(0, 10)));
  });

  it('when filter.model names one model, then only its usage is counted', async () => {
    const rows = await allRows(`${RANGE}&groupBy=model&timezone=UTC&filter.model=large`);
    expect(new Set(rows.map((row) => row.groups.model))).toEqual(new Set(['large']));
    expect(new Map(rows.map((row) => [row.windowStart.slice(0, 10), row.value]))).toEqual(sums(counted().filter((event) => event.model === 'large'), (event) => event.timestamp.slice(0, 10)));
    expect(await allRows(`${RANGE}&groupBy=model&timezone=UTC&filter%5Bmodel%5D=large`)).toEqual(rows);
    const both = await allRows(`${RANGE}&groupBy=model&timezone=UTC&filter.model=large,small`);
    expect(both).toEqual(await allRows(`${RANGE}&groupBy=model&timezone=UTC`));
  });

  it("when the windows follow Berlin, then they are Berlin's calendar days, the day summer time ends lasting 25 hours", async () => {
    const rows = await allRows('from=2026-10-22T00:00:00%2B02:00&to=2026-10-28T00:00:00%2B01:00&timezone=Europe/Berlin');
    const inRange = counted().filter((event) => Date.parse(event.timestamp) >= Date.parse('2026-10-21T22:00:00Z') && Date.parse(event.timestamp) < Date.parse('2026-10-27T23:00:00Z'));
    expect(new Map(rows.map((row) => [dayIn('Europe/Berlin', row.windowStart), row.value]))).toEqual(sums(inRange, (event) => dayIn('Europe/Berlin', event.timestamp)));
    const longDay = rows.find((row) => row.windowStart === '2026-10-24T22:00:00.000Z')!;
    expect(longDay.windowEnd).toBe('2026-10-25T23:00:00.000Z');
    const utc = await allRows(`${RANGE}&timezone=UTC`);
    expect(utc.map((row) => row.value)).not.toEqual(rows.map((row) => row.value));
  });

  it('when the clocks go forward, then that day lasts 23 hours', async () => {
    const body = await query('from=2026-03-28T00:00:00Z&to=2026-03-31T00:00:00Z&timezone=Europe/Berlin&windowSize=hour');
    expect(body.data.rows).toEqual([]);
    const res = await api
      .http()
      .post('/events/batch')
      .set(system())
      .send({ events: [{ CustomerEntityId: customers[0]!.entityId, metric, value: 3, timestamp: '2026-03-29T12:00:00Z', metadata: { model: 'small', direction: 'input' } }] })
      .expect(200);
    expect(res.body.data.summary).toMatchObject({ success: 1 });
    const day = await query('from=2026-03-28T00:00:00Z&to=2026-03-31T00:00:00Z&timezone=Europe/Berlin');
    expect(day.data.rows).toEqual([{ windowStart: '2026-03-28T23:00:00.000Z', windowEnd: '2026-03-29T22:00:00.000Z', groups: {}, value: '3' }]);
  });

  it('when hour and day windows cross a clock change, then each starts where the local clock first reads its start, from totals, rollups and raw events alike', async () => {
    const own = `clocks_${randomUUID().slice(0, 8)}`;
    const meter = (await api.http().post('/meters').set(admin()).send({ name: own, metric: own, aggregation: 'sum', groupBy: ['model'] }).expect(201)).body.data.id as string;
    const at = (timestamp: string, value: number) => ({ CustomerEntityId: customers[0]!.entityId, metric: own, value, timestamp, metadata: { model: 'small' } });
    const events = [
      // Berlin, 25 October: 03:00 summer time goes back to 02:00 at 01:00Z, so 02:00 is read twice.
      at('2026-10-24T23:30:00Z', 1), at('2026-10-25T00:10:00Z', 2), at('2026-10-25T01:10:00Z', 4), at('2026-10-25T02:10:00Z', 8),
      // Chatham, 27 September: 02:45 goes forward to 03:45 at 14:00Z, so the local hour 03 lasts a quarter.
      at('2026-09-26T13:20:00Z', 16), at('2026-09-26T14:05:00Z', 32), at('2026-09-26T14:20:00Z', 64),
      // Havana, 1 November: 01:00 goes back to 00:00 at 05:00Z, so the day starts at 04:00Z and midnight is read twice.
      at('2026-10-31T12:00:00Z', 128), at('2026-11-01T04:30:00Z', 256), at('2026-11-01T12:00:00Z', 512),
      // Chatham, 5 April: 03:45 goes back to 02:45 at 14:00Z, so 03:00 is read first at 13:15Z, again at 14:15Z.
      at('2026-04-04T13:30:00Z', 1024), at('2026-04-04T14:05:00Z', 2048), at('2026-04-04T14:20:00Z', 4096),
    ];
    expect((await api.http().post('/events/batch').set(system()).send({ events }).expect(200)).body.data.summary).toMatchObject({ success: events.length });
    const read = async (params: string) => {
      const body = (await api.http().get(`/meters/${meter}/query?${params}`).set(system()).expect(200)).body;
      return (body.data.rows as Row[]).map((row) => [row.windowStart, row.windowEnd, row.value]);
    };
    const whole = { customer: '', own: `&customerId=${customers[0]!.customerId}`, grouped: '&groupBy=model' };
    for (const scope of Object.values(whole)) {
      expect(await read(`from=2026-10-24T23:00:00Z&to=2026-10-25T03:00:00Z&windowSize=hour&timezone=Europe/Berlin${scope}`)).toEqual([
        ['2026-10-24T23:00:00.000Z', '2026-10-25T00:00:00.000Z', '1'],
        ['2026-10-25T00:00:00.000Z', '2026-10-25T02:00:00.000Z', '6'],
        ['2026-10-25T02:00:00.000Z', '2026-10-25T03:00:00.000Z', '8'],
      ]);
      expect(await read(`from=2026-09-26T12:15:00Z&to=2026-09-26T15:15:00Z&windowSize=hour&timezone=Pacific/Chatham${scope}`)).toEqual([
        ['2026-09-26T13:15:00.000Z', '2026-09-26T14:00:00.000Z', '16'],
        ['2026-09-26T14:00:00.000Z', '2026-09-26T14:15:00.000Z', '32'],
        ['2026-09-26T14:15:00.000Z', '2026-09-26T15:15:00.000Z', '64'],
      ]);
      expect(await read(`from=2026-10-31T04:00:00Z&to=2026-11-02T05:00:00Z&windowSize=day&timezone=America/Havana${scope}`)).toEqual([
        ['2026-10-31T04:00:00.000Z', '2026-11-01T04:00:00.000Z', '128'],
        ['2026-11-01T04:00:00.000Z', '2026-11-02T05:00:00.000Z', '768'],
      ]);
      // The local hour 02 holds 12:15Z to 13:15Z and, read again, 14:00Z to 14:15Z; the hour 03 starts where 03:00 is first read.
      expect(await read(`from=2026-04-04T12:15:00Z&to=2026-04-04T15:15:00Z&windowSize=hour&timezone=Pacific/Chatham${scope}`)).toEqual([
        ['2026-04-04T12:15:00.000Z', '2026-04-04T13:15:00.000Z', '2048'],
        ['2026-04-04T13:15:00.000Z', '2026-04-04T15:15:00.000Z', '5120'],
      ]);
    }
    // A start off the quarter hours is read from raw events: the same windows, the events after it.
    expect(await read('from=2026-10-24T23:40:00Z&to=2026-10-25T03:00:00Z&windowSize=hour&timezone=Europe/Berlin')).toEqual([
      ['2026-10-25T00:00:00.000Z', '2026-10-25T02:00:00.000Z', '6'],
      ['2026-10-25T02:00:00.000Z', '2026-10-25T03:00:00.000Z', '8'],
    ]);
  });

  it('when pages are read, then they hold the rows in order without overlap', async () => {
    const whole = await query(`${RANGE}&groupBy=model,direction&timezone=UTC&limit=1000`);
    const paged = await allRows(`${RANGE}&groupBy=model,direction&timezone=UTC`);
    expect(paged).toEqual(whole.data.rows);
    expect(whole.data.total).toBe(paged.length);
    const past = await query(`${RANGE}&groupBy=model&timezone=UTC&page=99&limit=10`);
    expect(past.data).toMatchObject({ rows: [], total: whole.data.total / 2, page: 99, limit: 10 });
  });

  it('when a query asks for what the meter does not have, or too much, then it answers 400 naming the parameter', async () => {
    const unknown = await query(`${RANGE}&groupBy=region`, 400);
    expect(unknown.errors[0].path).toBe('query.groupBy');
    expect((await query(`${RANGE}&filter.region=eu`, 400)).errors[0].path).toBe('query.filter.region');
    expect((await query(`${RANGE}&filter=small`, 400)).errors[0]).toMatchObject({ path: 'query.filter', message: 'must name a dimension: filter[model]=a,b or filter.model=a,b' });
    for (const odd of ['filter[region][x]=eu', 'filter[]=eu', 'filter.=eu', 'filter[region=eu']) {
      expect((await query(`${RANGE}&${odd}`, 400)).errors[0]).toMatchObject({ path: 'query.filter', message: 'must name one dimension: filter[model]=a,b or filter.model=a,b' });
    }
    expect((await query('from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z&windowSize=hour', 400)).errors[0].path).toBe('query.to');
    expect((await query(`${RANGE}&timezone=Mars/Olympus`, 400)).errors[0].path).toBe('query.timezone');
    expect((await query(`${RANGE}&customerId=cus_${randomUUID()}`, 404)).errors[0].path).toBe('query.customerId');
    // Paging and grouping say what they take, not what the parser received.
    expect((await query(`${RANGE}&page=abc`, 400)).errors).toEqual([{ code: 1001, path: 'query.page', message: 'must be a whole number from 1' }]);
    expect((await query(`${RANGE}&limit=1.5`, 400)).errors).toEqual([{ code: 1001, path: 'query.limit', message: 'must be a whole number from 1 to 1000' }]);
    const sevenKeys = (await query(`${RANGE}&${Array.from({ length: 7 }, (_, i) => `groupBy=k${i}`).join('&')}`, 400)).errors;
    expect(sevenKeys).toEqual([expect.objectContaining({ path: 'query.groupBy' })]);
    expect(sevenKeys[0].message).not.toMatch(/^Invalid input/);
  });

  it('when the meter is billed through an invoice run, then only the filtered events are billed, and its filters, dimensions, metric and aggregation can no longer change', async () => {
    const change = { filters: [{ key: 'direction', operator: 'exists' }] };
    const before = await api.http().put(`/meters/${meterId}`).set(admin()).send({ groupBy: ['model', 'direction'] }).expect(200);
    expect(before.body.data.groupBy).toEqual(['model', 'direction']);
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({ name: metric, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Tokens', pricingModel: 'per_unit', unitPrice: '1', meterId }] })
      .expect(201);
    const customer = customers[1]!;
    const contract = await api.http().post('/contracts').set(system()).send({ customerId: customer.customerId, currency: 'USD', startDate: '2026-10-01', plans: [{ planId: plan.body.data.id }] }).expect(201);
    await api.http().post(`/contracts/${contract.body.data.id}/activate`).set(system()).send({}).expect(200);
    const started = await api.http().post('/invoice-runs').set(system()).send({ billingDate: '2026-11-01', contractIds: [contract.body.data.id] }).expect(201);
    let run = started.body.data;
    while (run.status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = (await api.http().get(`/invoice-runs/${started.body.data.id}`).set(system()).expect(200)).body.data;
    }
    const [invoice] = (await api.http().get('/invoices').query({ invoiceRunId: run.id }).set(system()).expect(200)).body.data.items;
    const billed = counted().filter((event) => event.customer === 1).reduce((total, event) => total + event.cents, 0);
    expect(invoice.items.map((line: { quantity: string }) => line.quantity)).toEqual([decimal(billed)]);

    const same = await api.http().put(`/meters/${meterId}`).set(admin()).send({ filters: [{ values: ['input', 'output'], operator: 'in', key: 'direction' }], groupBy: ['model', 'direction'] });
    expect(same.status).toBe(200);
    expect(same.body.data.filters).toEqual([{ key: 'direction', operator: 'in', values: ['input', 'output'] }]);
    // The same selection written in another order, a value repeated: no change, so neither refused nor refilled.
    const reordered = await api.http().put(`/meters/${meterId}`).set(admin()).send({ filters: [{ key: 'direction', operator: 'in', values: ['output', 'input', 'output'] }] });
    expect([reordered.status, reordered.body.data?.backfill?.status]).toEqual([200, same.body.data.backfill.status]);
    const refused = await api.http().put(`/meters/${meterId}`).set(admin()).send(change);
    expect(refused.status).toBe(409);
    expect((await api.http().put(`/meters/${meterId}`).set(admin()).send({ groupBy: ['model'] })).status).toBe(409);
    // Nor what it counts or how it folds it: the next run would give back what was billed.
    for (const other of [{ metric: `${metric}_2` }, { aggregation: 'count' }]) {
      const res = await api.http().put(`/meters/${meterId}`).set(admin()).send(other);
      expect([res.status, res.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining('its metric, aggregation, uniqueField, filters and groupBy can no longer change')]);
    }
    await api.http().put(`/meters/${meterId}`).set(admin()).send({ name: `${metric} renamed` }).expect(200);
  });
});

describe('a meter that plan items price by dimension value', () => {
  it('when its groupBy would drop a key an item prices by, or its aggregation would no longer fold, then 409 names the item; a key added is taken', async () => {
    const tag = randomUUID().slice(0, 8);
    const meter = (await api.http().post('/meters').set(admin()).send({ name: `priced ${tag}`, metric: `priced_${tag}`, aggregation: 'sum', groupBy: ['model', 'direction'] }).expect(201)).body.data.id as string;
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({ name: `priced ${tag}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Tokens', meterId: meter, dimensionalPrices: [{ match: { model: 'small' }, pricingModel: 'per_unit', unitPrice: '0.001' }] }] })
      .expect(201);
    const itemId = plan.body.data.items[0].id as string;
    const dropped = await api.http().put(`/meters/${meter}`).set(admin()).send({ groupBy: ['direction'] }).expect(409);
    expect(dropped.body.errors[0].message).toBe(
      `Plan item ${itemId} of billing plan ${plan.body.data.id} prices this meter's usage by dimension value, and would no longer fit it: dimensionalPrices.0.match.model: "model" is not a dimension of the meter (its groupBy: direction)`,
    );
    const latest = await api.http().put(`/meters/${meter}`).set(admin()).send({ aggregation: 'latest' }).expect(409);
    expect(latest.body.errors[0].message).toContain('the meter aggregates by latest, whose values per dimension value do not add up');
    const added = await api.http().put(`/meters/${meter}`).set(admin()).send({ groupBy: ['model', 'direction', 'project'] }).expect(200);
    expect([added.body.data.groupBy, added.body.data.aggregation]).toEqual([['model', 'direction', 'project'], 'sum']);
  });

  it('when usage of the meter is being rated, then a change of its definition waits for the rating to commit, so that it is checked against the charges made', async () => {
    const tag = randomUUID().slice(0, 8);
    const meter = (await api.http().post('/meters').set(admin()).send({ name: `rated ${tag}`, metric: `rated_${tag}`, aggregation: 'sum', groupBy: ['model'] }).expect(201)).body.data.id as string;
    // What an invoice run holds while it rates the meter's usage and writes its charges.
    const rating = await api.db.transaction();
    await rating('meters').where({ id: meter }).forShare().first();
    const change = watched(api.http().put(`/meters/${meter}`).set(admin()).send({ groupBy: ['model', 'direction'] }));
    await new Promise((resolve) => setTimeout(resolve, 750));
    expect(change.answered()).toBe(false);
    await rating.commit();
    expect((await change.answer).status).toBe(200);
  });
});

describe('the example of docs/meters.md', () => {
  it('when its four events are sent, then the queries answer the rows the document shows', async () => {
    const tag = randomUUID().slice(0, 8);
    const meter = await api
      .http()
      .post('/meters')
      .set(admin())
      .send({ name: `Tokens ${tag}`, metric: `tokens_${tag}`, aggregation: 'sum', groupBy: ['model', 'direction'], filters: [{ key: 'direction', operator: 'in', values: ['input', 'output'] }] })
      .expect(201);
    const entity = customers[0]!.entityId;
    const event = (value: number, timestamp: string, model: string, direction: string) => ({ CustomerEntityId: entity, metric: `tokens_${tag}`, value, timestamp, metadata: { model, direction } });
    const events = [
      event(1200, '2026-11-02T09:00:00Z', 'small', 'input'),
      event(350, '2026-11-02T09:00:05Z', 'small', 'output'),
      event(5000, '2026-11-02T10:00:00Z', 'small', 'cached'),
      event(800, '2026-11-02T23:30:00Z', 'large', 'input'),
    ];
    await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
    const read = async (params: string) => (await api.http().get(`/meters/${meter.body.data.id}/query?${params}`).set(system()).expect(200)).body.data;
    const row = (windowStart: string, windowEnd: string, groups: Record<string, string>, value: string) => ({ windowStart, windowEnd, groups, value });

    expect(await read('from=2026-11-02T00:00:00Z&to=2026-11-04T00:00:00Z&groupBy=model&timezone=UTC')).toEqual({
      meterId: meter.body.data.id,
      from: '2026-11-02T00:00:00Z',
      to: '2026-11-04T00:00:00Z',
      windowSize: 'day',
      timezone: 'UTC',
      rows: [row('2026-11-02T00:00:00.000Z', '2026-11-03T00:00:00.000Z', { model: 'large' }, '800'), row('2026-11-02T00:00:00.000Z', '2026-11-03T00:00:00.000Z', { model: 'small' }, '1550')],
      page: 1,
      limit: 100,
      total: 2,
    });
    const berlin = await read('from=2026-11-02T00:00:00%2B01:00&to=2026-11-04T00:00:00%2B01:00&groupBy=model&timezone=Europe/Berlin');
    expect(berlin).toMatchObject({ from: '2026-11-02T00:00:00+01:00', timezone: 'Europe/Berlin' });
    expect(berlin.rows).toEqual([row('2026-11-01T23:00:00.000Z', '2026-11-02T23:00:00.000Z', { model: 'small' }, '1550'), row('2026-11-02T23:00:00.000Z', '2026-11-03T23:00:00.000Z', { model: 'large' }, '800')]);
    const small = await read('from=2026-11-02T00:00:00Z&to=2026-11-04T00:00:00Z&groupBy=model,direction&filter%5Bmodel%5D=small&timezone=UTC');
    expect(small.rows).toEqual([
      row('2026-11-02T00:00:00.000Z', '2026-11-03T00:00:00.000Z', { model: 'small', direction: 'input' }, '1200'),
      row('2026-11-02T00:00:00.000Z', '2026-11-03T00:00:00.000Z', { model: 'small', direction: 'output' }, '350'),
    ]);
    const byCustomer = await read('from=2026-11-02T00:00:00Z&to=2026-11-04T00:00:00Z&groupBy=customer&timezone=UTC');
    expect(byCustomer.rows).toEqual([row('2026-11-02T00:00:00.000Z', '2026-11-03T00:00:00.000Z', { customer: customers[0]!.customerId }, '2350')]);

    // Priced per model and direction, the upcoming invoice of 1 December holds the lines the document shows.
    const price = (match: Record<string, string>, unitPrice: string) => ({ match, pricingModel: 'per_unit', unitPrice });
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({
        name: `AI tokens ${tag}`,
        currency: 'USD',
        billingPeriod: 'monthly',
        items: [{ name: 'Tokens', meterId: meter.body.data.id, dimensionalPrices: [price({ model: 'small', direction: 'input' }, '0.001'), price({ model: 'small', direction: 'output' }, '0.004'), price({ model: 'large' }, '0.01')] }],
      })
      .expect(201);
    const contract = await api.http().post('/contracts').set(system()).send({ customerId: customers[0]!.customerId, currency: 'USD', startDate: '2026-11-01', plans: [{ planId: plan.body.data.id }] }).expect(201);
    await api.http().post(`/contracts/${contract.body.data.id}/activate`).set(system()).send({}).expect(200);
    const upcoming = (await api.http().get(`/contracts/${contract.body.data.id}/upcoming-invoice?date=2026-12-01`).set(system()).expect(200)).body.data;
    const planItemId = plan.body.data.items[0].id;
    const line = (title: string, description: string, quantity: string, unitPrice: string, dimensions: Record<string, string>) => ({ planItemId, title, description, quantity, price: unitPrice, fromDate: '2026-11-01', toDate: '2026-11-30', dimensions });
    expect(upcoming.invoices).toEqual([
      {
        contractPlanId: contract.body.data.plans[0].id,
        currency: 'USD',
        fromDate: '2026-11-01',
        toDate: '2026-11-30',
        total: '10.60',
        items: [
          line('Tokens — model small, direction input', 'per unit: 1200 × 0.001', '1200', '0.001', { model: 'small', direction: 'input' }),
          line('Tokens — model small, direction output', 'per unit: 350 × 0.004', '350', '0.004', { model: 'small', direction: 'output' }),
          line('Tokens — model large', 'per unit: 800 × 0.01', '800', '0.01', { model: 'large' }),
        ],
      },
    ]);
  });
});

describe('a plan item priced per model and direction', () => {
  interface Line {
    title: string;
    quantity: string;
    price: string;
    amount: string | null;
    dimensions: Record<string, string | null> | null;
  }
  /** Prices in cents per unit; large input is graduated: 2 cents for its first 20,000 units, 1.5 after. */
  const PER_UNIT: Record<string, number> = { 'small|input': 1, 'small|output': 3, 'large|output': 6 };
  const TIER_UNITS = 20_000;
  const dimensionalPrices = [
    { match: { model: 'small', direction: 'input' }, pricingModel: 'per_unit', unitPrice: '0.01' },
    { match: { model: 'small', direction: 'output' }, pricingModel: 'per_unit', unitPrice: '0.03' },
    { match: { model: 'large', direction: 'input' }, pricingModel: 'graduated', tiers: [{ upTo: String(TIER_UNITS), unitPrice: '0.02' }, { upTo: null, unitPrice: '0.015' }] },
    { match: { model: 'large', direction: 'output' }, pricingModel: 'per_unit', unitPrice: '0.06' },
  ];
  /** What an entry's usage (in hundredths of a unit, as the events were sent) costs, in cents, rounded half-up: BigInt arithmetic of its own. */
  function centsFor(entry: string, hundredths: number): bigint {
    const units = BigInt(hundredths);
    if (PER_UNIT[entry] !== undefined) return (units * BigInt(PER_UNIT[entry]!) + 50n) / 100n;
    // In millionths of a dollar: hundredths of a unit × (2 or 1.5 cents as 200 or 150 ten-thousandths).
    const first = units < BigInt(TIER_UNITS * 100) ? units : BigInt(TIER_UNITS * 100);
    const millionths = first * 200n + (units - first) * 150n;
    return (millionths + 5000n) / 10000n;
  }
  const money = (cents: bigint) => `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
  const lineCents = (line: Line) => BigInt(line.amount!.replace('.', ''));

  let contractId: string;
  let invoiceLines: Line[];
  const ofCustomer = () => counted().filter((event) => event.customer === 0 && event.timestamp >= '2026-10-01');

  async function meterWith(name: string) {
    const res = await api
      .http()
      .post('/meters')
      .set(admin())
      .send({ name: `${metric} ${name}`, metric, aggregation: 'sum', groupBy: ['model', 'direction', 'project'], filters: [{ key: 'direction', operator: 'in', values: ['input', 'output'] }] })
      .expect(201);
    return res.body.data.id as string;
  }

  async function runOn(billingDate: string): Promise<Line[]> {
    const started = await api.http().post('/invoice-runs').set(system()).send({ billingDate, contractIds: [contractId] }).expect(201);
    let run = started.body.data;
    while (run.status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = (await api.http().get(`/invoice-runs/${started.body.data.id}`).set(system()).expect(200)).body.data;
    }
    expect(run.failures).toEqual([]);
    const invoices = (await api.http().get('/invoices').query({ invoiceRunId: run.id }).set(system()).expect(200)).body.data.items;
    expect(invoices).toHaveLength(1);
    return (await api.http().get(`/invoices/${invoices[0].id}`).set(system()).expect(200)).body.data.items;
  }

  beforeAll(async () => {
    const plain = await meterWith('priced');
    const byProject = await meterWith('priced by project');
    // A model no entry prices, on a day of October outside the queries above.
    await api
      .http()
      .post('/events/batch')
      .set(system())
      .send({ events: [{ CustomerEntityId: customers[0]!.entityId, metric, value: 42, timestamp: '2026-10-15T12:00:00Z', metadata: { model: 'tiny', direction: 'input', project: 'alpha' } }] })
      .expect(200);
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({
        name: `${metric} priced`,
        currency: 'USD',
        billingPeriod: 'monthly',
        items: [
          { name: 'Tokens', meterId: plain, dimensionalPrices },
          { name: 'Tokens by project', meterId: byProject, dimensionalPrices, presentationGroupBy: ['project'] },
        ],
      })
      .expect(201);
    expect(plan.body.data.items[0]).toMatchObject({ pricingModel: null, unitPrice: null, presentationGroupBy: null, dimensionalPrices: [{ match: { model: 'small', direction: 'input' }, pricingModel: 'per_unit', unitPrice: '0.01', tiers: null }, {}, {}, {}] });
    const contract = await api.http().post('/contracts').set(system()).send({ customerId: customers[0]!.customerId, currency: 'USD', startDate: '2026-10-01', plans: [{ planId: plan.body.data.id }] }).expect(201);
    contractId = contract.body.data.id;
    await api.http().post(`/contracts/${contractId}/activate`).set(system()).send({}).expect(200);
  });

  it('when October is billed, then each (model, direction) bills a line of its usage at its price, exact to the cent, and the model nothing prices a 0.00 line', async () => {
    const upcoming = await api.http().get(`/contracts/${contractId}/upcoming-invoice?date=2026-11-01`).set(system()).expect(200);
    invoiceLines = await runOn('2026-11-01');
    const lines = invoiceLines.filter((line) => line.title.startsWith('Tokens — '));
    const usage = new Map<string, number>();
    for (const event of ofCustomer()) usage.set(`${event.model}|${event.direction}`, (usage.get(`${event.model}|${event.direction}`) ?? 0) + event.cents);
    expect(lines.map((line) => line.title)).toEqual([
      'Tokens — model small, direction input',
      'Tokens — model small, direction output',
      'Tokens — model large, direction input',
      'Tokens — model large, direction output',
      'Tokens — model tiny, direction input, project alpha',
    ]);
    for (const line of lines.slice(0, 4)) {
      const entry = `${line.dimensions!.model}|${line.dimensions!.direction}`;
      expect(line.dimensions).toEqual({ model: line.dimensions!.model, direction: line.dimensions!.direction });
      expect(line.quantity).toBe(decimal(usage.get(entry)!));
      expect(line.amount).toBe(money(centsFor(entry, usage.get(entry)!)));
    }
    // Large input crosses its first tier, so both of its prices count.
    expect(usage.get('large|input')!).toBeGreaterThan(TIER_UNITS * 100);
    expect(lines[4]).toMatchObject({ quantity: '42', amount: '0.00', dimensions: { model: 'tiny', direction: 'input', project: 'alpha' } });
    // The upcoming invoice showed the same lines, dimensions and all.
    const shown = upcoming.body.data.invoices[0].items.map((line: Line) => ({ title: line.title, quantity: line.quantity, price: line.price, dimensions: line.dimensions }));
    expect(shown).toEqual(invoiceLines.map((line) => ({ title: line.title, quantity: line.quantity, price: line.price, dimensions: line.dimensions })));
  });

  it('when the item splits its lines by project, then each entry has a line per project whose quantities and amounts add up to the entry', async () => {
    const lines = invoiceLines.filter((line) => line.title.startsWith('Tokens by project — '));
    const priced = lines.filter((line) => line.dimensions!.model !== 'tiny');
    expect(priced).toHaveLength(8);
    for (const [model, direction] of [['small', 'input'], ['small', 'output'], ['large', 'input'], ['large', 'output']] as const) {
      const entry = `${model}|${direction}`;
      const split = priced.filter((line) => line.dimensions!.model === model && line.dimensions!.direction === direction);
      expect(split.map((line) => line.title)).toEqual(PROJECTS.map((project) => `Tokens by project — model ${model}, direction ${direction}, project ${project}`));
      let total = 0;
      const usageOf = new Map<Line, number>();
      for (const line of split) {
        const cents = ofCustomer().filter((event) => `${event.model}|${event.direction}` === entry && event.project === line.dimensions!.project).reduce((sum, event) => sum + event.cents, 0);
        expect(line.quantity).toBe(decimal(cents));
        expect(line.dimensions).toEqual({ model, direction, project: line.dimensions!.project });
        usageOf.set(line, cents);
        total += cents;
      }
      const whole = centsFor(entry, total);
      expect(split.reduce((sum, line) => sum + lineCents(line), 0n)).toBe(whole);
      // Each share is within a cent of its exact proportion of the entry's amount.
      for (const line of split) expect(Math.abs(Number(lineCents(line)) - (Number(whole) * usageOf.get(line)!) / total)).toBeLessThan(1);
    }
    expect(lines.filter((line) => line.dimensions!.model === 'tiny')).toEqual([expect.objectContaining({ quantity: '42', amount: '0.00', dimensions: { model: 'tiny', direction: 'input', project: 'alpha' } })]);
  });

  it('when usage of October arrives after it was billed, then the next invoice charges only the difference, per entry', async () => {
    const late = [
      { value: '100', model: 'small', direction: 'input', project: 'alpha' },
      { value: '50', model: 'small', direction: 'input', project: 'beta' },
      { value: '10', model: 'large', direction: 'output', project: 'beta' },
    ];
    await api
      .http()
      .post('/events/batch')
      .set(system())
      .send({ events: late.map(({ value, ...metadata }) => ({ CustomerEntityId: customers[0]!.entityId, metric, value, timestamp: '2026-10-30T08:00:00Z', metadata })) })
      .expect(200);
    const lines = await runOn('2026-12-01');
    const shown = lines.map((line) => [line.title, line.quantity, line.price, line.amount, line.dimensions]);
    expect(shown).toEqual([
      ['Tokens — model small, direction input: usage of 2026-10-01 to 2026-10-31', '150', '0.01', '1.50', { model: 'small', direction: 'input' }],
      ['Tokens — model large, direction output: usage of 2026-10-01 to 2026-10-31', '10', '0.06', '0.60', { model: 'large', direction: 'output' }],
      ['Tokens by project — model small, direction input: usage of 2026-10-01 to 2026-10-31', '150', '0.01', '1.50', { model: 'small', direction: 'input' }],
      ['Tokens by project — model large, direction output: usage of 2026-10-01 to 2026-10-31', '10', '0.06', '0.60', { model: 'large', direction: 'output' }],
    ]);
    const charges = (await api.http().get(`/contracts/${contractId}/charges?limit=100`).set(system()).expect(200)).body.data.items;
    const smallInput = charges.filter((charge: { dimensions: Record<string, string> | null }) => charge.dimensions?.model === 'small' && charge.dimensions.direction === 'input');
    expect(smallInput.map((charge: { quantity: string }) => charge.quantity).sort()).toEqual(['150', '150', decimal(ofCustomer().filter((event) => event.model === 'small' && event.direction === 'input').reduce((sum, event) => sum + event.cents, 0)), decimal(ofCustomer().filter((event) => event.model === 'small' && event.direction === 'input').reduce((sum, event) => sum + event.cents, 0))].sort());
  });

  it('when a plan has entries that could tie, or keys the meter lacks, or a meter whose usage does not add up, then it is refused naming them', async () => {
    const meterId = await meterWith('refusals');
    const planWith = (item: object) => api.http().post('/billing/plans').set(admin()).send({ name: `Refused ${randomUUID().slice(0, 6)}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Tokens', meterId, ...item }] });
    const tie = await planWith({ pricingModel: 'per_unit', unitPrice: '0.01', dimensionalPrices: [{ match: { model: 'small' }, pricingModel: 'per_unit', unitPrice: '1' }, { match: { direction: 'input' }, pricingModel: 'per_unit', unitPrice: '2' }] });
    expect(tie.status).toBe(400);
    expect(tie.body.errors).toEqual([expect.objectContaining({ path: 'body.items.0.dimensionalPrices.1.match', message: expect.stringContaining('dimensionalPrices 0 and 1 tie: usage with model small, direction input would match both') })]);
    const same = await planWith({ dimensionalPrices: [{ match: { model: 'small' }, pricingModel: 'per_unit', unitPrice: '1' }, { match: { model: 'small' }, pricingModel: 'per_unit', unitPrice: '2' }] });
    expect(same.status).toBe(400);
    expect(same.body.errors[0].message).toContain('dimensionalPrices 0 and 1 tie');
    // More keys on one side, or a different value on a key both name: no tie.
    await planWith({ dimensionalPrices: [{ match: { model: 'small' }, pricingModel: 'per_unit', unitPrice: '1' }, { match: { model: 'small', direction: 'input' }, pricingModel: 'per_unit', unitPrice: '2' }, { match: { model: 'large' }, pricingModel: 'per_unit', unitPrice: '3' }] }).expect(201);
    const unknown = await planWith({ dimensionalPrices: [{ match: { region: 'eu' }, pricingModel: 'per_unit', unitPrice: '1' }], presentationGroupBy: ['customer_tier'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(['body.items.0.dimensionalPrices.0.match.region', 'body.items.0.presentationGroupBy.0']);
    const latest = await api.http().post('/meters').set(admin()).send({ name: `${metric} latest`, metric, aggregation: 'latest', groupBy: ['model'] }).expect(201);
    const onLatest = await api.http().post('/billing/plans').set(admin()).send({ name: `Refused ${randomUUID().slice(0, 6)}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Tokens', meterId: latest.body.data.id, dimensionalPrices: [{ match: { model: 'small' }, pricingModel: 'per_unit', unitPrice: '1' }] }] });
    expect(onLatest.status).toBe(400);
    expect(onLatest.body.errors[0]).toMatchObject({ path: 'body.items.0.dimensionalPrices', message: expect.stringContaining('aggregates by latest') });
    const noMeter = await api.http().post('/billing/plans').set(admin()).send({ name: `Refused ${randomUUID().slice(0, 6)}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Seats', dimensionalPrices: [{ match: { model: 'small' }, pricingModel: 'per_unit', unitPrice: '1' }] }] });
    expect(noMeter.status).toBe(400);
    expect(noMeter.body.errors[0].path).toBe('body.items.0.meterId');
    // Neither a price of its own nor prices per dimension value: the item is told both ways to price it.
    const unpriced = await planWith({});
    expect([unpriced.status, unpriced.body.errors]).toEqual([400, [expect.objectContaining({ path: 'body.items.0.dimensionalPrices', message: expect.stringContaining('is required when the item has no pricingModel') })]]);
    // A value past 400 bytes is grouped by its digest: a match names the digest, not the text.
    const long = await planWith({ dimensionalPrices: [{ match: { model: '€'.repeat(134) }, pricingModel: 'per_unit', unitPrice: '1' }] });
    expect([long.status, long.body.errors[0]]).toEqual([400, expect.objectContaining({ path: 'body.items.0.dimensionalPrices.0.match.model', message: expect.stringContaining('at most 400 bytes') })]);
  });
});

describe('usage that adds up to nothing or less', () => {
  it('when the values a line is split by add up to nothing, and an entry to less, then the upcoming invoice and the run bill them without failing', async () => {
    const own = `net_${randomUUID().slice(0, 8)}`;
    const meter = (await api.http().post('/meters').set(admin()).send({ name: own, metric: own, aggregation: 'sum', groupBy: ['model', 'direction'] }).expect(201)).body.data.id as string;
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({
        name: own,
        currency: 'USD',
        billingPeriod: 'monthly',
        items: [
          {
            name: 'Tokens',
            meterId: meter,
            pricingModel: 'per_unit',
            unitPrice: '0.0007',
            presentationGroupBy: ['direction'],
            dimensionalPrices: [{ match: { model: 'large' }, pricingModel: 'graduated', tiers: [{ upTo: '10', unitPrice: '1' }, { upTo: null, unitPrice: '0.5' }] }],
          },
        ],
      })
      .expect(201);
    const customer = await api.http().post('/customers').set(system()).send({ name: `Net ${own}`, currency: 'USD' }).expect(201);
    const entity = await api.http().post('/entities').set(system()).send({ type: 'customer', name: 'Entity', customerId: customer.body.data.id }).expect(201);
    const contract = await api.http().post('/contracts').set(system()).send({ customerId: customer.body.data.id, currency: 'USD', startDate: '2026-11-01', plans: [{ planId: plan.body.data.id }] }).expect(201);
    await api.http().post(`/contracts/${contract.body.data.id}/activate`).set(system()).send({}).expect(200);
    const event = (value: number, model: string, direction: string) => ({ CustomerEntityId: entity.body.data.id, metric: own, value, timestamp: '2026-11-03T09:00:00Z', metadata: { model, direction } });
    const events = [event(5, 'small', 'input'), event(-5, 'small', 'output'), event(-50, 'large', 'input'), event(30, 'large', 'output')];
    expect((await api.http().post('/events/batch').set(system()).send({ events }).expect(200)).body.data.summary).toMatchObject({ success: 4 });

    // The large model's -20 rates as no usage on its tiers; the other usage adds up to 0 units at 0.0007.
    const lines = (items: Array<{ title: string; quantity: string; price: string }>) => items.map((line) => [line.title, line.quantity, line.price]);
    const expected = [
      ['Tokens — model large, direction input', '-50', '0'],
      ['Tokens — model large, direction output', '30', '0'],
      ['Tokens — other usage, direction input', '5', '0.0007'],
      ['Tokens — other usage, direction output', '-5', '0.0007'],
    ];
    const upcoming = await api.http().get(`/contracts/${contract.body.data.id}/upcoming-invoice?date=2026-12-01`).set(system()).expect(200);
    expect(lines(upcoming.body.data.invoices[0].items)).toEqual(expected);
    const billed = await billedByRun(contract.body.data.id, '2026-12-01');
    expect(lines(billed.items)).toEqual(expected);
    expect(billed).toMatchObject({ subtotal: '0.00', total: '0.00' });
  });
});

describe('a billed unique count', () => {
  it('when its uniqueField would change, then 409, since the next run would count the billed months anew', async () => {
    const own = `users_${randomUUID().slice(0, 8)}`;
    const meter = (await api.http().post('/meters').set(admin()).send({ name: own, metric: own, aggregation: 'unique_count', uniqueField: 'userId' }).expect(201)).body.data.id as string;
    const plan = await api.http().post('/billing/plans').set(admin()).send({ name: own, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Users', pricingModel: 'per_unit', unitPrice: '5', meterId: meter }] }).expect(201);
    const customer = await api.http().post('/customers').set(system()).send({ name: `Users ${own}`, currency: 'USD' }).expect(201);
    const entity = await api.http().post('/entities').set(system()).send({ type: 'customer', name: 'Entity', customerId: customer.body.data.id }).expect(201);
    const contract = (await api.http().post('/contracts').set(system()).send({ customerId: customer.body.data.id, currency: 'USD', startDate: '2026-10-01', plans: [{ planId: plan.body.data.id }] }).expect(201)).body.data.id as string;
    await api.http().post(`/contracts/${contract}/activate`).set(system()).send({}).expect(200);
    // Three users, two of them sharing an e-mail address: counted by e-mail they would be two.
    const events = ['u1', 'u2', 'u3'].map((userId, index) => ({ CustomerEntityId: entity.body.data.id, metric: own, value: 1, timestamp: `2026-10-1${index}T09:00:00Z`, metadata: { userId, email: index < 2 ? 'a@x.test' : 'b@x.test' } }));
    await api.http().post('/events/batch').set(system()).send({ events }).expect(200);

    // Before anything is billed, the field may change; and back.
    await api.http().put(`/meters/${meter}`).set(admin()).send({ uniqueField: 'email' }).expect(200);
    await api.http().put(`/meters/${meter}`).set(admin()).send({ uniqueField: 'userId' }).expect(200);
    const billed = await billedByRun(contract, '2026-11-01');
    expect(billed.items.map((line: { quantity: string }) => line.quantity)).toEqual(['3']);

    const refused = await api.http().put(`/meters/${meter}`).set(admin()).send({ uniqueField: 'email' });
    expect([refused.status, refused.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining('uniqueField')]);
    expect((await api.http().get(`/meters/${meter}`).set(admin()).expect(200)).body.data.uniqueField).toBe('userId');
    await api.http().put(`/meters/${meter}`).set(admin()).send({ uniqueField: 'userId', name: `${own} renamed` }).expect(200);
  });
});

describe('a coupon on usage split by presentation values', () => {
  it('when a contract with a coupon bills usage split into lines per project, then the run completes and the coupon takes its share off every part', async () => {
    const own = `split_${randomUUID().slice(0, 8)}`;
    const meter = (await api.http().post('/meters').set(admin()).send({ name: own, metric: own, aggregation: 'sum', groupBy: ['project'] }).expect(201)).body.data.id as string;
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({ name: own, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Tokens', pricingModel: 'per_unit', unitPrice: '0.5', meterId: meter, presentationGroupBy: ['project'] }] })
      .expect(201);
    const customer = await api.http().post('/customers').set(system()).send({ name: `Split ${own}`, currency: 'USD' }).expect(201);
    const entity = await api.http().post('/entities').set(system()).send({ type: 'customer', name: 'Entity', customerId: customer.body.data.id }).expect(201);
    const contract = (await api.http().post('/contracts').set(system()).send({ customerId: customer.body.data.id, currency: 'USD', startDate: '2026-10-01', plans: [{ planId: plan.body.data.id }] }).expect(201)).body.data.id as string;
    await api.http().post(`/contracts/${contract}/activate`).set(system()).send({}).expect(200);
    const code = `TEN${own.slice(-8).toUpperCase()}`;
    await api.http().post('/coupons').set(admin()).send({ code, percentOff: '10', duration: 'forever' }).expect(201);
    await api.http().post(`/contracts/${contract}/coupons`).set(system()).send({ code }).expect(201);
    const event = (value: number, project: string) => ({ CustomerEntityId: entity.body.data.id, metric: own, value, timestamp: '2026-10-12T09:00:00Z', metadata: { project } });
    await api.http().post('/events/batch').set(system()).send({ events: [event(100, 'alpha'), event(300, 'beta')] }).expect(200);

    const lines = (items: Array<{ title: string; quantity: string; price: string }>) => items.map((line) => [line.title, line.quantity, line.price]);
    const expected = [
      ['Tokens — project alpha', '100', '0.5'],
      ['Tokens — project beta', '300', '0.5'],
      [`Coupon ${code}`, '1', '-20'],
    ];
    const upcoming = await api.http().get(`/contracts/${contract}/upcoming-invoice?date=2026-11-01`).set(system()).expect(200);
    expect(lines(upcoming.body.data.invoices[0].items)).toEqual(expected);
    const billed = await billedByRun(contract, '2026-11-01');
    expect(lines(billed.items)).toEqual(expected);
    expect(billed).toMatchObject({ subtotal: '180.00' });
  });
});
