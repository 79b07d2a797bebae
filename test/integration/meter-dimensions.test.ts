import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

let api: TestApi;
let tenant: Tenant;
const admin = () => bearer(tenant.adminToken);
const system = () => bearer(tenant.systemToken);

const MODELS = ['small', 'large'];
const DIRECTIONS = ['input', 'output', 'cached'];
/** Days of October 2026 around the end of summer time in Berlin (25 October: a 25-hour day). */
const FIRST = Date.parse('2026-10-22T00:00:00Z');
const SPAN_MS = 6 * 86_400_000;

interface Sent {
  customer: number;
  model: string;
  direction: string;
  cents: number;
  timestamp: string;
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
  for (let index = 0; index < 1000; index += 1) {
    sent.push({
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
    metadata: { model: event.model, direction: event.direction },
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
    expect((await query('from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z&windowSize=hour', 400)).errors[0].path).toBe('query.to');
    expect((await query(`${RANGE}&timezone=Mars/Olympus`, 400)).errors[0].path).toBe('query.timezone');
    await query(`${RANGE}&customerId=cus_${randomUUID()}`, 404);
  });

  it('when the meter is billed through an invoice run, then only the filtered events are billed, and its filters can no longer change', async () => {
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
    const refused = await api.http().put(`/meters/${meterId}`).set(admin()).send(change);
    expect(refused.status).toBe(409);
    expect((await api.http().put(`/meters/${meterId}`).set(admin()).send({ groupBy: ['model'] })).status).toBe(409);
    await api.http().put(`/meters/${meterId}`).set(admin()).send({ name: `${metric} renamed` }).expect(200);
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
  });
});
