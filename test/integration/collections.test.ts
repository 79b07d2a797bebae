import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody, type BillingFixture } from './support/billing-fixtures';
import { capturedMail } from './support/smtp-capture';
import { createInvoiceRepository } from '../../src/modules/invoices/invoices.repository';

const DAY_MS = 24 * 60 * 60 * 1000;

let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

/** Calendar days in UTC: the zone of these organisations, in which overdue and ageing count them. */
const today = () => new Date().toISOString().slice(0, 10);
const daysFrom = (day: string, days: number) => new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

/** An organisation of its own, so that its invoices alone make up what it is owed. */
async function organisation(label: string, settings: object = {}) {
  const tenant = await createTenant(api, label);
  const fixture = await createBillingFixture(api, tenant);
  if (Object.keys(settings).length > 0) await api.http().put('/organisation/settings').set(bearer(tenant.adminToken)).send(settings).expect(200);
  return { tenant, fixture, auth: bearer(tenant.systemToken) };
}

async function createInvoice(tenant: Tenant, contractPlanId: string, date: string, price = 100): Promise<string> {
  const body = { ...invoiceBody(contractPlanId, [{ title: 'Platform fee', quantity: 1, price }]), invoiceData: { date } };
  const res = await api.http().post('/invoices').set(bearer(tenant.systemToken)).send(body).expect(201);
  return res.body.data.id as string;
}

async function raised(tenant: Tenant, contractPlanId: string, date: string, price = 100): Promise<{ id: string; dueDate: string }> {
  const id = await createInvoice(tenant, contractPlanId, date, price);
  const res = await api.http().post(`/invoices/${id}/raise`).set(bearer(tenant.systemToken)).expect(200);
  return { id, dueDate: res.body.data.dueDate };
}

/** A customer with its own payment terms and an active contract on the fixture's seller. */
async function customerWithTerms(tenant: Tenant, paymentTermsDays: number): Promise<{ customerId: string; contractPlanId: string }> {
  const system = bearer(tenant.systemToken);
  const customer = await api.http().post('/customers').set(system).send({ name: `Terms ${randomUUID().slice(0, 8)}`, currency: 'USD', paymentTermsDays }).expect(201);
  const plan = await api
    .http()
    .post('/billing/plans')
    .set(bearer(tenant.adminToken))
    .send({ name: `Plan ${randomUUID().slice(0, 8)}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Platform fee', pricingModel: 'flat', unitPrice: '100' }] })
    .expect(201);
  const contract = await api
    .http()
    .post('/contracts')
    .set(system)
    .send({ customerId: customer.body.data.id, currency: 'USD', startDate: '2026-01-01', plans: [{ planId: plan.body.data.id }] })
    .expect(201);
  return { customerId: customer.body.data.id, contractPlanId: contract.body.data.plans[0].id };
}

/** Polls Postgres until the worker has recorded the invoice's reminders (it sends them after the raise). */
async function remindersOf(invoiceId: string, expected: number): Promise<Array<{ days_after_due: number; sent_to: string[]; message_id: string }>> {
  for (let tries = 0; tries < 100; tries += 1) {
    const rows = await api.db('invoice_reminders').where({ invoice_id: invoiceId }).orderBy('days_after_due').select('days_after_due', 'sent_to', 'message_id');
    if (rows.length >= expected) return rows;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return api.db('invoice_reminders').where({ invoice_id: invoiceId }).select('days_after_due', 'sent_to', 'message_id');
}

describe('payment terms and due dates', () => {
  it("when an invoice of a customer with its own terms is raised, then its due date is the invoice date plus the customer's terms, and undoing the raise clears it", async () => {
    const { tenant, auth } = await organisation('terms-customer');
    const { customerId, contractPlanId } = await customerWithTerms(tenant, 14);
    expect((await api.http().get(`/customers/${customerId}`).set(auth).expect(200)).body.data.paymentTermsDays).toBe(14);

    const id = await createInvoice(tenant, contractPlanId, '2026-11-01');
    expect((await api.http().get(`/invoices/${id}`).set(auth)).body.data.dueDate).toBeNull();
    const raise = await api.http().post(`/invoices/${id}/raise`).set(auth).expect(200);
    expect(raise.body.data).toMatchObject({ status: 'raised', dueDate: '2026-11-15' });

    const undone = await api.http().post(`/fsm/invoice/${id}/undo`).set(auth).send({}).expect(200);
    expect(undone.body.data).toMatchObject({ status: 'draft', dueDate: null });
  });

  it("when the customer has no terms of its own, then the organisation's apply (30 days unless changed)", async () => {
    const { tenant, fixture, auth } = await organisation('terms-organisation');
    expect((await api.http().get(`/customers/${fixture.customerId}`).set(auth)).body.data.paymentTermsDays).toBeNull();
    expect((await raised(tenant, fixture.contractPlanId, '2026-11-01')).dueDate).toBe('2026-12-01');

    await api.http().put('/organisation/settings').set(bearer(tenant.adminToken)).send({ paymentTermsDays: 45 }).expect(200);
    expect((await raised(tenant, fixture.contractPlanId, '2026-11-01')).dueDate).toBe('2026-12-16');
  });

  it('when a customer is created with terms outside 0 to 365 days, then 400 names the field', async () => {
    const { auth } = await organisation('terms-refused');
    const res = await api.http().post('/customers').set(auth).send({ name: 'Too patient', paymentTermsDays: 366 });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.errors)).toContain('paymentTermsDays');
  });
});

describe('the reminder schedule setting', () => {
  it('when it is read, then it is [1, 7, 14]; when it is changed, then it is kept ascending, each day once; out of range or over 10 days, 400', async () => {
    const { tenant } = await organisation('dunning-settings');
    const admin = bearer(tenant.adminToken);
    expect((await api.http().get('/organisation/settings').set(admin).expect(200)).body.data.dunningScheduleDays).toEqual([1, 7, 14]);

    const changed = await api.http().put('/organisation/settings').set(admin).send({ dunningScheduleDays: [30, 7, 14, 7] }).expect(200);
    expect(changed.body.data.dunningScheduleDays).toEqual([7, 14, 30]);

    for (const refused of [[0], [366], Array.from({ length: 11 }, (_, i) => i + 1)]) {
      const res = await api.http().put('/organisation/settings').set(admin).send({ dunningScheduleDays: refused });
      expect(res.status).toBe(400);
    }
    expect((await api.http().get('/organisation/settings').set(admin)).body.data.dunningScheduleDays).toEqual([7, 14, 30]);
  });
});

describe('overdue invoices and ageing', () => {
  // Terms of 10 days: an invoice dated d days ago is due in 10 - d days.
  const dated = (daysPastDue: number) => daysFrom(today(), -10 - daysPastDue);
  let owner: Awaited<ReturnType<typeof organisation>>;
  let euro: BillingFixture;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    owner = await organisation('ageing', { paymentTermsDays: 10 });
    const { tenant, fixture, auth } = owner;
    euro = await createBillingFixture(api, tenant, 'EUR');
    await api.http().post('/fx-rates').set(auth).send({ fromCurrency: 'EUR', toCurrency: 'USD', rate: '1.1', effectiveDate: '2025-01-01' }).expect(201);
    const plan = fixture.contractPlanId;
    ids.current = (await raised(tenant, plan, dated(-5), 100)).id;
    ids.dueToday = (await raised(tenant, plan, dated(0), 10)).id;
    ids.pastDue3 = (await raised(tenant, plan, dated(3), 200)).id;
    ids.pastDue30 = (await raised(tenant, plan, dated(30), 50)).id;
    ids.pastDue31 = (await raised(tenant, plan, dated(31), 300)).id;
    ids.pastDue75 = (await raised(tenant, plan, dated(75), 400)).id;
    ids.pastDue120 = (await raised(tenant, plan, dated(120), 500)).id;
    await api.http().post(`/invoices/${ids.pastDue75}/send`).set(auth).expect(200);
    ids.euroPastDue45 = (await raised(tenant, euro.contractPlanId, dated(45), 70)).id;
    // Not owed: a draft, a paid and a cancelled invoice, all long past their dates.
    ids.draft = await createInvoice(tenant, plan, dated(40), 1000);
    ids.paid = (await raised(tenant, plan, dated(40), 2000)).id;
    await api.http().post(`/invoices/${ids.paid}/mark-paid`).set(auth).send({ paidDate: today() }).expect(200);
    ids.cancelled = (await raised(tenant, plan, dated(40), 4000)).id;
    await api.http().put(`/invoices/${ids.cancelled}`).set(auth).send({ status: 'cancelled' }).expect(200);
    // Raised and past due, but a credit note took all it owed: nothing is overdue on it.
    const credited = await raised(tenant, plan, dated(20), 60);
    ids.creditedPastDue20 = credited.id;
    const total = (await api.http().get(`/invoices/${credited.id}`).set(auth).expect(200)).body.data.total as string;
    await api.http().post(`/invoices/${credited.id}/credit-notes`).set(auth).send({ reason: 'Not delivered', amount: total, refund: false }).expect(201);
    expect((await api.http().get(`/invoices/${credited.id}`).set(auth).expect(200)).body.data).toMatchObject({ status: 'raised', amountDue: '0.00' });
  });

  it('when collections are read, then raised and sent invoices are summed per currency into their ageing buckets', async () => {
    const res = await api.http().get('/collections').set(owner.auth).expect(200);

    expect(res.body.data).toEqual({
      asOfDate: today(),
      asOf: today(),
      currencies: [
        {
          currency: 'EUR',
          total: '70.00',
          invoices: 1,
          buckets: { current: '0.00', '1-30': '0.00', '31-60': '70.00', '61-90': '0.00', '90+': '0.00' },
        },
        {
          currency: 'USD',
          // current: 100 (due in 5 days) + 10 (due today); 1-30: 200 + 50; 31-60: 300; 61-90: 400 (sent); 90+: 500.
          total: '1560.00',
          invoices: 7,
          buckets: { current: '110.00', '1-30': '250.00', '31-60': '300.00', '61-90': '400.00', '90+': '500.00' },
        },
      ],
    });
  });

  it('when an organisation has nothing owed, then collections list no currency', async () => {
    const { auth } = await organisation('ageing-empty');
    expect((await api.http().get('/collections').set(auth).expect(200)).body.data).toEqual({ asOfDate: today(), asOf: today(), currencies: [] });
  });

  it('when invoices are listed with overdue=true, then only raised and sent invoices past their due date that still owe come; with overdue=false, the others', async () => {
    const list = async (overdue: string) => {
      const res = await api.http().get('/invoices').query({ overdue, limit: 100 }).set(owner.auth).expect(200);
      return (res.body.data.items as Array<{ id: string }>).map((invoice) => invoice.id).sort();
    };

    expect(await list('true')).toEqual([ids.pastDue3, ids.pastDue30, ids.pastDue31, ids.pastDue75, ids.pastDue120, ids.euroPastDue45].sort());
    expect(await list('false')).toEqual([ids.current, ids.dueToday, ids.draft, ids.paid, ids.cancelled, ids.creditedPastDue20].sort());
    expect((await api.http().get('/invoices').query({ overdue: 'yes' }).set(owner.auth)).status).toBe(400);
  });

  it('when an invoice is raised long past its due date, then only the latest reminder of the schedule goes out, once, to its contacts', async () => {
    const [reminder, ...more] = await remindersOf(ids.pastDue120!, 1);

    expect(more).toEqual([]);
    expect(reminder).toEqual({ days_after_due: 14, sent_to: [...owner.fixture.contactEmails].sort(), message_id: `<invoice-${ids.pastDue120}-reminder-14@billing>` });
    const mail = capturedMail(process.env.TEST_MAIL_DIR!).filter((message) => message.includes(`invoice-${ids.pastDue120}-reminder-14`));
    expect(mail).toHaveLength(1);
    expect(mail[0]).toContain('is overdue');
    expect(await remindersOf(ids.current!, 0)).toEqual([]);
  });
});

describe('invoices of an invoice run', () => {
  it('when invoices are listed by invoiceRunId, then only those the run made come, each naming its run', async () => {
    const { tenant, fixture, auth } = await organisation('invoice-run-filter');
    const runId = `run_${randomUUID()}`;
    await api.db('invoice_runs').insert({ id: runId, organisation_id: tenant.organisationId, billing_date: '2026-11-01', workflow_id: `invoice-run:${runId}` });
    const contract = await api.db('contract_plans').where({ id: fixture.contractPlanId }).first('contract_id');
    const made = await createInvoiceRepository(api.db).create({
      organisationId: tenant.organisationId,
      customerId: fixture.customerId,
      contractId: contract.contract_id,
      contractPlanId: fixture.contractPlanId,
      currency: 'USD',
      date: '2026-11-01',
      invoiceRunId: runId,
      items: [{ title: 'Platform fee', quantity: '1', price: '100' }],
    });
    const byHand = await createInvoice(tenant, fixture.contractPlanId, '2026-11-01');

    const res = await api.http().get('/invoices').query({ invoiceRunId: runId }).set(auth).expect(200);

    expect(res.body.data.items.map((invoice: { id: string; invoiceRunId: string | null }) => [invoice.id, invoice.invoiceRunId])).toEqual([[made.id, runId]]);
    expect((await api.http().get(`/invoices/${byHand}`).set(auth)).body.data.invoiceRunId).toBeNull();
  });
});

describe('overdue where the customer is', () => {
  it("when the organisation's day is ahead of its customer's, then an invoice due on the customer's today is overdue in no list and no ageing, with or without the customer named", async () => {
    const tenant = await createTenant(api, 'collections-zones');
    await api.http().put('/organisation/settings').set(bearer(tenant.adminToken)).send({ timezone: 'Pacific/Auckland' }).expect(200);
    const fixture = await createBillingFixture(api, tenant, 'USD', { customer: { timezone: 'America/Los_Angeles' } });
    const auth = bearer(tenant.systemToken);
    const customerToday = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/Los_Angeles' }).format(new Date());
    const dueToday = await raised(tenant, fixture.contractPlanId, daysFrom(customerToday, -30), 100);
    const dueYesterday = await raised(tenant, fixture.contractPlanId, daysFrom(customerToday, -31), 40);
    await api.db('invoices').where({ id: dueToday.id }).update({ due_date: customerToday });
    await api.db('invoices').where({ id: dueYesterday.id }).update({ due_date: daysFrom(customerToday, -1) });

    for (const query of [{ overdue: 'true' }, { overdue: 'true', customerId: fixture.customerId }]) {
      const listed = await api.http().get('/invoices').query(query).set(auth).expect(200);
      expect([query, listed.body.data.items.map((invoice: { id: string }) => invoice.id)]).toEqual([query, [dueYesterday.id]]);
    }
    for (const query of [{}, { customerId: fixture.customerId }]) {
      const ageing = await api.http().get('/collections').query(query).set(auth).expect(200);
      expect([query, ageing.body.data.currencies[0].buckets]).toEqual([query, expect.objectContaining({ current: '100.00', '1-30': '40.00' })]);
    }
  });
});
