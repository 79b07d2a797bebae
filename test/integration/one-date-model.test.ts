import { addDays } from '../../src/domain/billing-periods';
import { dayIn } from '../../src/domain/zoned-days';
import { ianaTimeZone } from '../../src/http/schemas';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody, invoicesOfFinishedRun, type BillingFixture } from './support/billing-fixtures';
import { binary, pdfText } from './support/read-back';

/**
 * Two zones 25 hours apart: at any instant their calendar days differ from each other, and the
 * organisation's zone is picked so that its day also differs from the UTC day when the test runs.
 */
const KIRITIMATI = 'Pacific/Kiritimati'; // UTC+14
const PAGO_PAGO = 'Pacific/Pago_Pago'; // UTC-11
const ORG_ZONE = dayIn(KIRITIMATI) !== dayIn('UTC') ? KIRITIMATI : PAGO_PAGO;
const CUSTOMER_ZONE = ORG_ZONE === KIRITIMATI ? PAGO_PAGO : KIRITIMATI;

let api: TestApi;
let tenant: Tenant;
/** The organisation's own customer (no zone of its own), and one in another zone. */
let plain: BillingFixture;
let zoned: BillingFixture;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'one-date-model');
  await api.http().put('/organisation/settings').set(bearer(tenant.adminToken)).send({ timezone: ORG_ZONE }).expect(200);
  plain = await createBillingFixture(api, tenant);
  zoned = await createBillingFixture(api, tenant, 'USD', { customer: { timezone: CUSTOMER_ZONE } });
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);

/**
 * Runs `act` and answers the days `zone` had around it: a test that straddles the zone's midnight accepts
 * either day, and no other.
 */
async function around<T>(zone: string, act: () => Promise<T>): Promise<{ result: T; days: string[] }> {
  const before = dayIn(zone);
  const result = await act();
  return { result, days: [...new Set([before, dayIn(zone)])] };
}

/** The forms a document may write a calendar day in: ISO, with the month's name, or in numbers. */
function dayForms(day: string): RegExp {
  const [y, m, d] = day.split('-') as [string, string, string];
  const date = new Date(`${day}T00:00:00Z`);
  const month = date.toLocaleString('en-GB', { month: 'long', timeZone: 'UTC' });
  const short = date.toLocaleString('en-GB', { month: 'short', timeZone: 'UTC' });
  const [dd, mm] = [String(Number(d)), String(Number(m))];
  const forms = [day, `${dd} ${month} ${y}`, `${month} ${dd}, ${y}`, `${dd} ${short} ${y}`, `${short} ${dd}, ${y}`, `${d}.${m}.${y}`, `${d}/${m}/${y}`, `${m}/${d}/${y}`, `${mm}/${dd}/${y}`];
  return new RegExp(forms.map((form) => form.replace(/[./]/g, '\\$&')).join('|'));
}

async function raisedInvoice(fixture: BillingFixture): Promise<{ id: string; items: Array<{ id: string }> }> {
  const created = await api.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId)).expect(201);
  const raised = await api.http().post(`/invoices/${created.body.data.id}/raise`).set(system()).send({}).expect(200);
  return { id: raised.body.data.id, items: raised.body.data.items };
}

describe('one date model', () => {
  it("when the organisation's zone is ahead of or behind UTC, then a manual run bills today there, and its invoices are dated that day and fall due the terms later", async () => {
    await api.http().post(`/contracts/${plain.contractId}/activate`).set(system()).send({}).expect(200);
    const { result: run, days } = await around(ORG_ZONE, () => api.http().post('/invoice-runs').set(system()).send({ contractIds: [plain.contractId] }).expect(201));
    expect(days).toContain(run.body.data.billingDate);
    expect(days).not.toContain(dayIn('UTC'));
    const made = await invoicesOfFinishedRun<{ id: string; date: string }>(api, tenant, run.body.data.id);
    expect(made.length).toBeGreaterThan(0);
    for (const invoice of made) expect(invoice.date).toBe(run.body.data.billingDate);
    const first = made[0]!;
    const raised = await api.http().post(`/invoices/${first.id}/raise`).set(system()).send({}).expect(200);
    // The organisation's default terms: 30 days.
    expect(raised.body.data.dueDate).toBe(addDays(first.date, 30));
  });

  it("when a credit note is issued for a customer without a zone, then its JSON and its PDF carry today in the organisation's zone, not UTC's", async () => {
    const invoice = await raisedInvoice(plain);
    const { result: note, days } = await around(ORG_ZONE, () => api.http().post(`/invoices/${invoice.id}/credit-notes`).set(system()).send({ reason: 'Zone check', amount: '10' }).expect(201));
    expect(note.body.data.date).not.toBeNull();
    expect(days).toContain(note.body.data.date);
    // Whatever the hour, the organisation's day is not the UTC day of the same instant.
    expect(days).not.toContain(dayIn('UTC'));
    const read = await api.http().get(`/credit-notes/${note.body.data.id}`).set(system()).expect(200);
    expect(read.body.data.date).toBe(note.body.data.date);
    const pdf = await api.http().get(`/credit-notes/${note.body.data.id}/pdf`).set(system()).buffer(true).parse(binary).expect(200);
    expect(pdfText(pdf.body as Buffer)).toMatch(dayForms(note.body.data.date));
  });

  it("when the customer has a zone of its own, then its credit note, its collections day and a paid instant's day are read there, not in the organisation's", async () => {
    expect(dayIn(CUSTOMER_ZONE)).not.toBe(dayIn(ORG_ZONE));
    const customer = await api.http().get(`/customers/${zoned.customerId}`).set(system()).expect(200);
    expect(customer.body.data.timezone).toBe(CUSTOMER_ZONE);

    const invoice = await raisedInvoice(zoned);
    const { result: note, days } = await around(CUSTOMER_ZONE, () => api.http().post(`/invoices/${invoice.id}/credit-notes`).set(system()).send({ reason: 'Zone check', amount: '10' }).expect(201));
    expect(days).toContain(note.body.data.date);
    expect(note.body.data.date).not.toBe(dayIn(ORG_ZONE));
    const pdf = await api.http().get(`/credit-notes/${note.body.data.id}/pdf`).set(system()).buffer(true).parse(binary).expect(200);
    expect(pdfText(pdf.body as Buffer)).toMatch(dayForms(note.body.data.date));

    const mine = await around(CUSTOMER_ZONE, () => api.http().get('/collections').set(system()).query({ customerId: zoned.customerId }).expect(200));
    expect(mine.days).toContain(mine.result.body.data.asOfDate);
    const all = await around(ORG_ZONE, () => api.http().get('/collections').set(system()).expect(200));
    expect(all.days).toContain(all.result.body.data.asOfDate);

    // 10:30 UTC on 20 November is the 21st at Kiritimati and the 19th at Pago Pago.
    const paid = await api.http().post(`/invoices/${invoice.id}/mark-paid`).set(system()).send({ paidDate: '2026-11-20T10:30:00Z' }).expect(200);
    expect(paid.body.data.paidDate).toBe(CUSTOMER_ZONE === KIRITIMATI ? '2026-11-21' : '2026-11-19');
    // A date is the day itself, in any zone.
    const other = await raisedInvoice(zoned);
    const onDay = await api.http().post(`/invoices/${other.id}/mark-paid`).set(system()).send({ paidDate: '2026-11-20' }).expect(200);
    expect(onDay.body.data.paidDate).toBe('2026-11-20');
    // ... and its payment was made at the start of that day where the customer is.
    const payments = await api.http().get('/payments').set(system()).query({ invoiceId: other.id }).expect(200);
    expect(payments.body.data.items.map((payment: { paidAt: string }) => payment.paidAt)).toEqual([CUSTOMER_ZONE === KIRITIMATI ? '2026-11-19T10:00:00.000Z' : '2026-11-20T11:00:00.000Z']);
  });

  it("when a milestone of the customer in its own zone is achieved, then its invoice is dated today there and falls due the terms later", async () => {
    await api.http().post(`/contracts/${zoned.contractId}/activate`).set(system()).send({}).expect(200);
    const base = `/contracts/${zoned.contractId}/plans/${zoned.contractPlanId}/milestones`;
    const milestone = await api.http().post(base).set(system()).send({ planItemId: zoned.planItemId, name: 'Go-live', percentage: 10 }).expect(201);
    const { result: achieved, days } = await around(CUSTOMER_ZONE, () => api.http().post(`${base}/${milestone.body.data.id}/achieve`).set(system()).send({}).expect(200));
    const invoice = await api.http().get(`/invoices/${achieved.body.data.invoiceId}`).set(system()).expect(200);
    expect(days).toContain(invoice.body.data.date);
    expect(invoice.body.data.date).not.toBe(dayIn(ORG_ZONE));
    const raised = await api.http().post(`/invoices/${invoice.body.data.id}/raise`).set(system()).send({}).expect(200);
    expect(raised.body.data.dueDate).toBe(addDays(invoice.body.data.date, 30));
  });

  it("when no date is asked of the FX rates, then today in the organisation's zone is the day the rate is read for", async () => {
    const today = dayIn(ORG_ZONE);
    await api.http().post('/fx-rates').set(system()).send({ fromCurrency: 'NZD', toCurrency: 'USD', rate: '0.6', effectiveDate: today }).expect(201);
    const { result, days } = await around(ORG_ZONE, () => api.http().get('/fx-rates/effective').set(system()).query({ from: 'NZD', to: 'USD' }).expect(200));
    expect(days).toContain(result.body.data.date);
  });

  it("when a schedule is created without a zone, then it runs in the organisation's", async () => {
    const created = await api.http().post('/invoice-run-schedules').set(bearer(tenant.adminToken)).send({ name: 'Monthly', cron: '0 6 1 * *', paused: true }).expect(201);
    expect(created.body.data.timezone).toBe(ORG_ZONE);
    await api.http().delete(`/invoice-run-schedules/${created.body.data.id}`).set(bearer(tenant.adminToken)).expect(200);
  });

  it('when a customer is given a zone that is not an IANA name, then it is refused at its path', async () => {
    const res = await api.http().post('/customers').set(system()).send({ name: 'Nowhere Ltd', timezone: 'Mars/Olympus_Mons' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'body.timezone' })]);
  });

  it("when a zone is named by its current IANA name, its earlier one or a link (Asia/Kolkata, Asia/Calcutta, US/Pacific, Etc/GMT-14), then it is taken, and every zone the API takes is one Postgres reads days in", async () => {
    for (const timezone of ['Asia/Kolkata', 'Asia/Calcutta', 'Europe/Kyiv', 'Etc/UTC', 'US/Pacific', 'EST5EDT', 'Etc/GMT-14']) {
      const res = await api.http().post('/customers').set(system()).send({ name: `Zoned ${timezone}`, timezone }).expect(201);
      expect(res.body.data.timezone).toBe(timezone);
    }
    const known = new Set((await api.db.raw<{ rows: Array<{ name: string }> }>('SELECT name FROM pg_timezone_names')).rows.map((row) => row.name));
    expect(ianaTimeZone.in.options.filter((zone) => !known.has(zone))).toEqual([]);
  });

  it('when any zone the API takes reads a winter and a summer instant, then Postgres reads the same wall clock as the runtime (CET is no fixed UTC+01:00)', async () => {
    const zones = ianaTimeZone.in.options.map((zone) => ianaTimeZone.parse(zone));
    const instants = ['2026-01-15T23:30:00Z', '2026-07-15T22:30:00Z'];
    const { rows } = await api.db.raw<{ rows: Array<{ zone: string; instant: string; local: string }> }>(
      `SELECT zone, instant, to_char(instant::timestamptz AT TIME ZONE zone, 'YYYY-MM-DD HH24:MI') AS local
         FROM unnest(?::text[]) AS zone CROSS JOIN unnest(?::text[]) AS instant`,
      [zones, instants],
    );
    const runtime = (zone: string, instant: string) => {
      const parts = Object.fromEntries(new Intl.DateTimeFormat('en-CA', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' }).formatToParts(new Date(instant)).map((part) => [part.type, part.value]));
      return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}`;
    };
    expect(rows).toHaveLength(zones.length * instants.length);
    expect(rows.filter((row) => row.local !== runtime(row.zone, row.instant))).toEqual([]);
  });

  it('when a customer is given CET, EET, MET or WET, then it is kept and answered as the zone the name links to', async () => {
    const links = { CET: 'Europe/Brussels', EET: 'Europe/Athens', MET: 'Europe/Brussels', WET: 'Europe/Lisbon' };
    for (const [name, zone] of Object.entries(links)) {
      const res = await api.http().post('/customers').set(system()).send({ name: `Linked ${name}`, timezone: name }).expect(201);
      expect(res.body.data.timezone).toBe(zone);
    }
  });
});

describe('the ends of the calendar', () => {
  /** A draft of the plain fixture dated `date`, its period and its line's from `fromDate` to `toDate`. */
  const draftOf = (date: string, fromDate: string, toDate: string) => {
    const body = invoiceBody(plain.contractPlanId);
    const invoiceItems = body.invoiceItems.map((item) => ({ ...item, fromDate, toDate }));
    return api.http().post('/invoices').set(system()).send({ ...body, invoiceData: { date, fromDate, toDate }, invoiceItems }).expect(201);
  };

  it('when a day before the year 1000 is stored (an invoice of 0500-06-01, an FX rate of 0099-01-01), then it comes back as written, four digits for the year', async () => {
    const created = await draftOf('0500-06-01', '0500-06-01', '0500-06-30');
    expect([created.body.data.date, created.body.data.fromDate, created.body.data.toDate]).toEqual(['0500-06-01', '0500-06-01', '0500-06-30']);
    const read = await api.http().get(`/invoices/${created.body.data.id}`).set(system()).expect(200);
    expect(read.body.data.items[0]).toMatchObject({ fromDate: '0500-06-01', toDate: '0500-06-30' });
    const rate = await api.http().post('/fx-rates').set(bearer(tenant.adminToken)).send({ fromCurrency: 'NZD', toCurrency: 'USD', rate: '0.5', effectiveDate: '0099-01-01' }).expect(201);
    expect(rate.body.data.effectiveDate).toBe('0099-01-01');
  });

  it('when an invoice dated 9999-12-31 is raised with payment terms, then 409 says its due date would fall after the last day the API writes, and it stays a draft', async () => {
    const created = await draftOf('9999-12-31', '9999-12-01', '9999-12-31');
    const raised = await api.http().post(`/invoices/${created.body.data.id}/raise`).set(system()).send({});
    expect([raised.status, raised.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining('would fall after 9999-12-31')]);
    expect((await api.http().get(`/invoices/${created.body.data.id}`).set(system()).expect(200)).body.data.status).toBe('draft');
  });
});
