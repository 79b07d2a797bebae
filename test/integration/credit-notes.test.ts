import { randomUUID } from 'node:crypto';
import { createAccessTokens } from '../../src/modules/auth';
import { createCreditNoteBody } from '../../src/modules/credit-notes/credit-notes.schemas';
import { createApiServices, serviceDepsFrom } from '../../src/services';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody, invoicesOfRun, type BillingFixture } from './support/billing-fixtures';
import { createCustomerEntity } from './support/fixtures';
import { binary, mailWith, pdfText } from './support/read-back';
import { recordHistory } from './support/record-history';

let api: TestApi;
let tenant: Tenant;
let fixture: BillingFixture;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'credit-notes');
  fixture = await createBillingFixture(api, tenant);
  // 20 % VAT on everything the contract bills.
  await api.http().post(`/contracts/${fixture.contractId}/taxes`).set(bearer(tenant.adminToken)).send({ name: 'VAT', rate: '20', appliesTo: 'all' }).expect(201);
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);

/** A raised invoice of two items, 100 and 50: subtotal 150, VAT 30, total 180; paid if asked. */
async function invoice(state: 'raised' | 'paid' = 'raised'): Promise<{ id: string; items: Array<{ id: string; title: string }> }> {
  const created = await api
    .http()
    .post('/invoices')
    .set(system())
    .send(
      invoiceBody(fixture.contractPlanId, [
        { title: 'Platform fee', quantity: 1, price: 100 },
        { title: 'Seats', quantity: 5, price: 10 },
      ]),
    )
    .expect(201);
  const id = created.body.data.id as string;
  const raised = await api.http().post(`/invoices/${id}/raise`).set(system()).send({}).expect(200);
  expect(raised.body.data.total).toBe('180.00');
  if (state === 'paid') await api.http().post(`/invoices/${id}/mark-paid`).set(system()).send({ paidDate: '2026-11-20' }).expect(200);
  return { id, items: raised.body.data.items };
}

const credit = (invoiceId: string, body: object) => api.http().post(`/invoices/${invoiceId}/credit-notes`).set(system()).send(body);
const payments = (invoiceId: string) => api.db('payments').where({ invoice_id: invoiceId }).whereNull('deleted_at').orderBy('created_at').select('amount', 'credit_note_id');
const revenueTotal = async (invoiceId: string) =>
  (await api.db('revenue_records').where({ invoice_id: invoiceId }).sum({ total: 'amount' }).first<{ total: string | null }>())?.total ?? '0';

describe('credit notes', () => {
  it('when part of a paid invoice is credited with a refund, then the note is numbered, a negative payment names it, and revenue drops by the net credited', async () => {
    const paid = await invoice('paid');
    expect(Number(await revenueTotal(paid.id))).toBe(150);
    const res = await credit(paid.id, { reason: 'Two seats returned', items: [{ invoiceItemId: paid.items[1]!.id, quantity: 2 }], refund: true });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      status: 'issued',
      number: expect.stringMatching(/^CN-\d{6}$/),
      settlement: 'refund',
      subtotal: '20.00',
      taxTotal: '4.00',
      total: '24.00',
      items: [{ invoiceItemId: paid.items[1]!.id, title: 'Seats', quantity: '2', amount: '20.00' }],
    });
    expect(await payments(paid.id)).toEqual([
      { amount: '180.0000', credit_note_id: null },
      { amount: '-24.0000', credit_note_id: res.body.data.id },
    ]);
    expect(Number(await revenueTotal(paid.id))).toBe(130);
    const listed = await api.http().get('/payments').set(system()).query({ invoiceId: paid.id }).expect(200);
    expect(listed.body.data.items.find((payment: { creditNoteId: string | null }) => payment.creditNoteId === res.body.data.id)).toMatchObject({ amount: '-24.00', method: 'refund' });
    // A refund changes with its credit note, not by hand.
    await api.http().delete(`/payments/${res.body.data.refundPaymentId}`).set(system()).expect(409);
    // Voided, the note names no refund payment (its payment is deleted); undone, it names it again.
    const voided = await api.http().post(`/credit-notes/${res.body.data.id}/void`).set(admin()).send({}).expect(200);
    expect(voided.body.data).toMatchObject({ status: 'voided', refundPaymentId: null });
    await api.http().get(`/payments/${res.body.data.refundPaymentId}`).set(system()).expect(404);
    const restored = await api.http().post(`/credit-notes/${res.body.data.id}/undo`).set(admin()).send({}).expect(200);
    expect(restored.body.data).toMatchObject({ status: 'issued', refundPaymentId: res.body.data.refundPaymentId });

    // Its PDF, laid out as the invoice, and the e-mail that takes it to the customer's contacts.
    const pdf = await api.http().get(`/credit-notes/${res.body.data.id}/pdf`).set(system()).buffer(true).parse(binary).expect(200);
    expect(pdf.headers['content-type']).toBe('application/pdf');
    const text = pdfText(pdf.body as Buffer);
    expect(text).toContain(`Credit note ${res.body.data.number}`);
    expect(text).toMatch(/Credits invoice INV-\d+/);
    expect(text).toContain('Two seats returned');
    const mail = await mailWith(`<credit-note-${res.body.data.id}-${res.body.data.number}@billing>`);
    expect(mail.subject).toBe(`Credit note ${res.body.data.number} from Seller Ltd`);
    expect((mail.to as { value: Array<{ address: string }> }).value.map((to) => to.address).sort()).toEqual([...fixture.contactEmails].sort());
    expect(mail.attachments.map((attachment) => attachment.filename)).toEqual([`${res.body.data.number}.pdf`]);
    expect(pdfText(mail.attachments[0]!.content)).toContain(`Credit note ${res.body.data.number}`);
  });

  it('when a paid invoice is credited to the balance, then the customer has that credit, and voiding takes it back', async () => {
    const paid = await invoice('paid');
    const res = await credit(paid.id, { reason: 'Goodwill', amount: '36' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ settlement: 'balance', subtotal: '30.00', taxTotal: '6.00', total: '36.00' });
    // The net is shared over the items in proportion to what is left of each: 100 and 50.
    expect(res.body.data.items.map((item: { amount: string }) => item.amount)).toEqual(['20.00', '10.00']);
    const credits = await api.http().get(`/customers/${fixture.customerId}/credits`).set(system()).expect(200);
    expect(credits.body.data.balances).toContainEqual({ currency: 'USD', balance: expect.any(String) });
    const entry = credits.body.data.ledger.items.find((item: { creditNoteId: string | null }) => item.creditNoteId === res.body.data.id);
    expect(entry).toMatchObject({ kind: 'credit_note', amount: '36.00' });

    const before = Number(credits.body.data.balances.find((balance: { currency: string }) => balance.currency === 'USD').balance);
    const voided = await api.http().post(`/credit-notes/${res.body.data.id}/void`).set(admin()).send({}).expect(200);
    expect(voided.body.data).toMatchObject({ status: 'voided', number: res.body.data.number });
    const after = await api.http().get(`/customers/${fixture.customerId}/credits`).set(system()).expect(200);
    expect(Number(after.body.data.balances.find((balance: { currency: string }) => balance.currency === 'USD').balance)).toBeCloseTo(before - 36, 2);
    expect(Number(await revenueTotal(paid.id))).toBe(150);
    // SystemUser issues credit notes; voiding one is Admin's.
    const forbidden = await api.http().post(`/credit-notes/${res.body.data.id}/undo`).set(system()).send({});
    expect(forbidden.status).toBe(403);
  });

  it('when an unpaid invoice is credited, then it owes less and its payment records only what is left', async () => {
    const raised = await invoice('raised');
    const res = await credit(raised.id, { reason: 'Wrong fee', items: [{ invoiceItemId: raised.items[0]!.id, amount: '100' }] });
    expect(res.body.data).toMatchObject({ settlement: 'reduces_due', total: '120.00' });
    await api.http().post(`/invoices/${raised.id}/mark-paid`).set(system()).send({ paidDate: '2026-11-21' }).expect(200);
    expect(await payments(raised.id)).toEqual([{ amount: '60.0000', credit_note_id: null }]);
    // The note left the payment at 60: it cannot stop counting now.
    await api.http().post(`/credit-notes/${res.body.data.id}/void`).set(admin()).send({}).expect(409);
  });

  it('when part of an unpaid invoice is paid by a recorded payment, then credit notes may lower only what is left, and the invoice can neither be cancelled nor unraised under the payment', async () => {
    const raised = await invoice('raised');
    const paid = await api.http().post('/payments').set(system()).send({ customerId: fixture.customerId, invoiceId: raised.id, amount: '100', currency: 'USD', paidAt: '2026-11-20T10:00:00Z', method: 'bank_transfer' }).expect(201);
    const whole = await credit(raised.id, { reason: 'All of it', amount: '180' });
    expect([whole.status, whole.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining("the invoice owes 80.00 USD, less than this credit note's 180.00: the rest was paid with the customer's credit or payments recorded against it")]);
    await credit(raised.id, { reason: 'What is left', amount: '80' }).expect(201);
    // With the note counting, cancelling is refused for the note; voided, for the payment alone.
    const cancelled = await api.http().put(`/invoices/${raised.id}`).set(admin()).send({ status: 'cancelled' });
    expect(cancelled.status).toBe(409);
    await api.http().post(`/credit-notes/${(await api.http().get('/credit-notes').set(system()).query({ invoiceId: raised.id }).expect(200)).body.data.items[0].id}/void`).set(admin()).send({}).expect(200);
    const unraised = await api.http().post(`/fsm/invoice/${raised.id}/undo`).set(admin()).send({});
    expect([unraised.status, unraised.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining(`payment ${paid.body.data.id} is recorded against the invoice; you cannot undo its raise`)]);
    const stillCancelled = await api.http().put(`/invoices/${raised.id}`).set(admin()).send({ status: 'cancelled' });
    expect([stillCancelled.status, stillCancelled.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining(`payment ${paid.body.data.id} is recorded against the invoice; you cannot cancel it`)]);
    // Once the payment is deleted (it was recorded in error, say), the invoice may be cancelled.
    await api.http().delete(`/payments/${paid.body.data.id}`).set(system()).expect(200);
    await api.http().put(`/invoices/${raised.id}`).set(admin()).send({ status: 'cancelled' }).expect(200);
  });

  it("when an invoice paid in full by a recorded payment is marked paid and then cancelled, then 409 names that payment: cancelling reverses only mark-paid's own payment", async () => {
    const raised = await invoice('raised');
    const pay = (amount: string) => api.http().post('/payments').set(system()).send({ customerId: fixture.customerId, invoiceId: raised.id, amount, currency: 'USD', paidAt: '2026-11-20T10:00:00Z', method: 'bank_transfer' });
    // More than the invoice owes would count nowhere: refused, naming what it owes.
    const over = await pay('180.01');
    expect([over.status, over.body.errors?.[0]?.message]).toEqual([409, "the invoice owes 180.00 USD, less than this payment's 180.01: record what it owes against it and the rest on account, without invoiceId"]);
    const paid = await pay('180.00').expect(201);
    // Nor may a correction raise it past what the invoice owes besides its other payments.
    const raisedBy = await api.http().put(`/payments/${paid.body.data.id}`).set(system()).send({ amount: '180.01' });
    expect([raisedBy.status, raisedBy.body.errors?.[0]?.message]).toEqual([409, 'the invoice owes 180.00 USD besides its other payments, less than 180.01: record the rest on account, without invoiceId']);
    await api.http().put(`/payments/${paid.body.data.id}`).set(system()).send({ reference: 'BACS-180' }).expect(200);
    await api.http().put(`/invoices/${raised.id}`).set(admin()).send({ status: 'paid', paidDate: '2026-11-20' }).expect(200);
    expect((await pay('1.00')).body.errors?.[0]?.message).toBe('the invoice is paid and owes nothing: record the payment on account, without invoiceId');
    // Mark-paid found nothing owed, so it recorded nothing: the transfer is the only payment.
    expect(await payments(raised.id)).toEqual([{ amount: '180.0000', credit_note_id: null }]);
    const cancelled = await api.http().put(`/invoices/${raised.id}`).set(admin()).send({ status: 'cancelled' });
    expect([cancelled.status, cancelled.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining(`payment ${paid.body.data.id} is recorded against the invoice; you cannot cancel it`)]);
    expect(await payments(raised.id)).toEqual([{ amount: '180.0000', credit_note_id: null }]);
  });

  it('when credit notes race a mark-paid, then whatever wins, the payment and the notes that lower what is owed add up to the total', async () => {
    for (let round = 0; round < 4; round += 1) {
      const raised = await invoice('raised');
      const answers = await Promise.all([
        ...Array.from({ length: 4 }, (_, i) => credit(raised.id, { reason: `Race ${round}.${i}`, amount: '50' })),
        api.http().post(`/invoices/${raised.id}/mark-paid`).set(system()).send({ paidDate: '2026-11-21' }),
      ]);
      expect(answers.map((res) => res.status).filter((status) => status !== 201 && status !== 409 && status !== 200)).toEqual([]);
      expect((await api.http().get(`/invoices/${raised.id}`).set(system()).expect(200)).body.data.status).toBe('paid');
      const paid = (await payments(raised.id)).filter((row) => row.credit_note_id === null).reduce((sum, row) => sum + Number(row.amount), 0);
      const lowered = await api.db('credit_notes').where({ invoice_id: raised.id, status: 'issued', settlement: 'reduces_due' }).sum({ total: 'total' }).first<{ total: string | null }>();
      expect([round, paid + Number(lowered?.total ?? 0)]).toEqual([round, 180]);
    }
  });

  it('when 50 credit notes of 4.00 are asked for at once on an invoice of 180.00, then 45 are issued with consecutive numbers and the rest refused', async () => {
    const raised = await invoice('raised');
    // Each client retries a 503 (fifty requests can outwait the database pool on two cores) with its
    // Idempotency-Key, after its Retry-After, as a well-behaved client would: the answers are then final.
    const ask = (i: number) =>
      api.http().post(`/invoices/${raised.id}/credit-notes`).set(system()).set('Idempotency-Key', `concurrent-${raised.id}-${i}`).send({ reason: `Concurrent ${i}`, amount: '4' });
    const answerOf = async (i: number) => {
      let res = await ask(i);
      for (let attempt = 0; res.status === 503 && attempt < 5; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, Math.min(Number(res.headers['retry-after'] ?? 1), 2) * 1000));
        res = await ask(i);
      }
      return res;
    };
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => answerOf(i)));
    const issued = answers.filter((res) => res.status === 201);
    const refused = answers.filter((res) => res.status !== 201);
    expect(issued).toHaveLength(45);
    expect(refused.map((res) => res.status)).toEqual(Array(5).fill(409));
    const numbers = issued.map((res) => Number(String(res.body.data.number).slice(3))).sort((a, b) => a - b);
    expect(numbers.at(-1)! - numbers[0]! + 1).toBe(45);
    expect(new Set(numbers).size).toBe(45);
    const stored = await api.db('credit_notes').where({ invoice_id: raised.id }).whereNot({ status: 'voided' }).sum({ total: 'total' }).count({ n: '*' }).first<{ total: string; n: string }>();
    expect([Number(stored!.total), Number(stored!.n)]).toEqual([180, 45]);
    // Nothing is left to credit, and the invoice with credit notes cannot be cancelled.
    await credit(raised.id, { reason: 'One more', amount: '0.01' }).expect(409);
    await api.http().put(`/invoices/${raised.id}`).set(admin()).send({ status: 'cancelled' }).expect(409);
  });

  it('when a request with an Idempotency-Key is run again after its note was made (its answer was a 5xx, which frees the key), then it carries that note on and never makes a second', async () => {
    const raised = await invoice('raised');
    const services = createApiServices({ ...serviceDepsFrom(api.config, api.db), temporal: api.temporal, accessTokens: createAccessTokens(api.config.JWT_SECRET!, api.config.ACCESS_TOKEN_TTL_SECONDS) });
    const body = createCreditNoteBody.parse({ reason: 'Retried', amount: '10' });
    const key = `retried-${raised.id}`;
    const first = await services.creditNotes.create(tenant.organisationId, raised.id, body, key);
    const again = await services.creditNotes.create(tenant.organisationId, raised.id, body, key);
    expect(again).toEqual(first);
    expect(first).toMatchObject({ status: 'issued', total: '10.00' });
    expect(await api.db('credit_notes').where({ invoice_id: raised.id }).count({ n: '*' }).first()).toEqual({ n: '1' });

    // A first run that stored its draft and stopped before the issue: the retry issues that draft.
    const stopped = await api.db('credit_notes').where({ id: first.id }).first();
    const draftId = `crn_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    await api.db('credit_notes').insert({ ...stopped, id: draftId, status: 'draft', number: null, number_sequence: null, settlement: null, issued_at: null, last_step_id: null, request_key: `stopped-${raised.id}` });
    const items = await api.db('credit_note_items').where({ credit_note_id: first.id });
    await api.db('credit_note_items').insert(items.map((item) => ({ ...item, id: `cni_${randomUUID().replace(/-/g, '').slice(0, 24)}`, credit_note_id: draftId })));
    const resumed = await services.creditNotes.create(tenant.organisationId, raised.id, body, `stopped-${raised.id}`);
    expect(resumed).toMatchObject({ id: draftId, status: 'issued', total: '10.00' });
    expect(await api.db('credit_notes').where({ invoice_id: raised.id }).count({ n: '*' }).first()).toEqual({ n: '2' });

    // The same key on another invoice is another request: refused, nothing made.
    const other = await invoice('raised');
    await expect(services.creditNotes.create(tenant.organisationId, other.id, body, key)).rejects.toThrow('This Idempotency-Key already created a credit note of another invoice');
    expect(await api.db('credit_notes').where({ invoice_id: other.id }).count({ n: '*' }).first()).toEqual({ n: '0' });
  });

  it('when an issue is undone, then the note is a draft again with its number, and issuing it again keeps that number', async () => {
    const paid = await invoice('paid');
    const res = await credit(paid.id, { reason: 'Mistaken refund', amount: '12', refund: true });
    const undone = await api.http().post(`/credit-notes/${res.body.data.id}/undo`).set(admin()).send({}).expect(200);
    expect(undone.body.data).toMatchObject({ status: 'draft', number: res.body.data.number, settlement: null });
    expect(await payments(paid.id)).toEqual([{ amount: '180.0000', credit_note_id: null }]);
    const again = await api.http().post(`/credit-notes/${res.body.data.id}/issue`).set(system()).send({}).expect(200);
    expect(again.body.data).toMatchObject({ status: 'issued', number: res.body.data.number, settlement: 'refund' });
    expect(await payments(paid.id)).toEqual([
      { amount: '180.0000', credit_note_id: null },
      { amount: '-12.0000', credit_note_id: res.body.data.id },
    ]);
    await recordHistory(api, `credit-note:${res.body.data.id}`, 'credit-note-issue-undo-issue');
  });

  it('when a credit note is asked for on a draft, for more than an item holds, or with more decimals than the currency, then it is refused and nothing is stored', async () => {
    const draft = await api.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId)).expect(201);
    await credit(draft.body.data.id, { reason: 'Too early', amount: '1' }).expect(409);
    const raised = await invoice('raised');
    const over = await credit(raised.id, { reason: 'Too much', items: [{ invoiceItemId: raised.items[1]!.id, amount: '50.01' }] });
    expect(over.status).toBe(409);
    expect(over.body.errors[0].message).toMatch(/Seats/);
    const decimals = await credit(raised.id, { reason: 'Odd', amount: '1.001' });
    expect(decimals.status).toBe(400);
    expect(decimals.body.errors[0].path).toBe('body.amount');
    // A body that takes one of two forms is told what is wrong with the form it came nearest to, by its path.
    for (const [body, path, message] of [
      [{ reason: 'Negative', amount: '-10' }, 'body.amount', 'must be greater than 0'],
      [{ reason: 'Zero', items: [{ invoiceItemId: raised.items[0]!.id, amount: '0' }] }, 'body.items.0.amount', 'must be greater than 0'],
      [{ reason: 'Neither' }, 'body.items', 'is required'],
    ] as const) {
      const res = await credit(raised.id, body);
      expect([res.status, res.body.errors]).toEqual([400, [{ code: 1001, path, message }]]);
    }
    await credit(raised.id, { reason: 'Refund of an unpaid invoice', amount: '1', refund: true }).expect(409);
    expect(await api.db('credit_notes').whereIn('invoice_id', [draft.body.data.id, raised.id]).count({ n: '*' }).first()).toEqual({ n: '0' });
    const list = await api.http().get('/credit-notes').set(system()).query({ invoiceId: raised.id }).expect(200);
    expect(list.body.data).toMatchObject({ items: [], total: 0 });
  });
});

type Line = { id: string; title: string; quantity: string; price: string; amount: string };
type RunInvoice = { id: string; subtotal: string; taxTotal: string; total: string; amountDue: string; data: { taxes: unknown[] }; items: Line[] };

/**
 * A contract in USD from 1 July 2026 on a monthly plan of `items`, with 20 % VAT on the plan items named in
 * `taxed` only, and its customer's entity to meter usage on.
 */
async function taxedContract(items: object[], taxed: string[]): Promise<{ contractId: string; contractPlanId: string; entityId: string; planItemIds: Record<string, string> }> {
  const { customerId, entityId } = await createCustomerEntity(api, tenant);
  const plan = await api.http().post('/billing/plans').set(admin()).send({ name: `Plan ${randomUUID().slice(0, 8)}`, currency: 'USD', billingPeriod: 'monthly', items }).expect(201);
  const planItemIds = Object.fromEntries(plan.body.data.items.map((item: { id: string; name: string }) => [item.name, item.id])) as Record<string, string>;
  const contract = await api.http().post('/contracts').set(system()).send({ customerId, currency: 'USD', startDate: '2026-07-01', plans: [{ planId: plan.body.data.id }] }).expect(201);
  await api
    .http()
    .post(`/contracts/${contract.body.data.id}/taxes`)
    .set(admin())
    .send({ name: 'VAT', rate: '20', appliesTo: taxed.map((name) => planItemIds[name]) })
    .expect(201);
  await api.http().post(`/contracts/${contract.body.data.id}/activate`).set(system()).send({}).expect(200);
  return { contractId: contract.body.data.id, contractPlanId: contract.body.data.plans[0].id, entityId, planItemIds };
}

/** The one invoice a run on `billingDate` makes for the contract, raised. */
async function raisedByRun(contractId: string, billingDate: string): Promise<RunInvoice> {
  const [draft] = await invoicesOfRun<{ id: string }>(api, tenant, contractId, billingDate);
  return (await api.http().post(`/invoices/${draft!.id}/raise`).set(system()).send({}).expect(200)).body.data;
}

const figures = (note: { subtotal: string; taxTotal: string; total: string; items: Array<{ title: string; quantity: string | null; amount: string }> }) => [
  note.items.map((item) => `${item.title} ${item.quantity ?? '-'} ${item.amount}`),
  note.subtotal,
  note.taxTotal,
  note.total,
];

describe('credit notes of discounted and partly taxed invoices', () => {
  it('when 5 of 10 seats are credited on an invoice a 50 % coupon halved, then the note credits what they paid, 25.00, with their own 20 % VAT', async () => {
    const metric = `seats_${randomUUID().slice(0, 8)}`;
    const meter = await api.http().post('/meters').set(admin()).send({ name: `Seats ${metric}`, metric, aggregation: 'sum' }).expect(201);
    const { contractId, entityId } = await taxedContract([{ name: 'Seats', pricingModel: 'per_unit', unitPrice: '10', meterId: meter.body.data.id }], ['Seats']);
    const code = `HALF${randomUUID().slice(0, 8)}`;
    await api.http().post('/coupons').set(admin()).send({ code, percentOff: '50', duration: 'once' }).expect(201);
    await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code }).expect(201);
    await api
      .http()
      .post('/events/batch')
      .set(system())
      .send({ events: [{ CustomerEntityId: entityId, metric, value: 10, timestamp: '2026-07-15T12:00:00Z' }] })
      .expect(200);
    const invoice = await raisedByRun(contractId, '2026-08-01');
    expect(invoice.items.map((item) => [item.title, item.quantity, item.price, item.amount])).toEqual([
      ['Seats', '10', '10', '100.00'],
      [`Coupon ${code}`, '1', '-50', '-50.00'],
    ]);
    expect([invoice.subtotal, invoice.taxTotal, invoice.total]).toEqual(['50.00', '10.00', '60.00']);
    const seats = invoice.items[0]!.id;

    const first = await credit(invoice.id, { reason: 'Five seats returned', items: [{ invoiceItemId: seats, quantity: 5 }] });
    expect(first.status).toBe(201);
    expect(figures(first.body.data)).toEqual([['Seats 5 25.00'], '25.00', '5.00', '30.00']);
    // The seats paid 50.00 in all: 25.00 of it is left.
    const over = await credit(invoice.id, { reason: 'More than they paid', items: [{ invoiceItemId: seats, amount: '25.01' }] });
    expect([over.status, over.body.errors[0].message]).toEqual([409, expect.stringContaining('exceeds what is left to credit on it, 25.00 USD')]);
    const rest = await credit(invoice.id, { reason: 'The other five', items: [{ invoiceItemId: seats, quantity: 5 }] });
    expect(figures(rest.body.data)).toEqual([['Seats 5 25.00'], '25.00', '5.00', '30.00']);
    const read = await api.http().get(`/invoices/${invoice.id}`).set(system()).expect(200);
    expect(read.body.data.amountDue).toBe('0.00');
  });

  it('when a fee of 10 seats at 10.00 is billed, then its line shows 10 × 10, and 4 of the seats can be credited by quantity: 40.00 with their 20 % VAT', async () => {
    const { contractId } = await taxedContract([{ name: 'Seats', pricingModel: 'flat', unitPrice: '10', quantity: '10' }], ['Seats']);
    const invoice = await raisedByRun(contractId, '2026-07-01');
    expect(invoice.items.map((item) => [item.title, item.quantity, item.price, item.amount])).toEqual([['Seats', '10', '10', '100.00']]);
    const note = await credit(invoice.id, { reason: 'Four seats unused', items: [{ invoiceItemId: invoice.items[0]!.id, quantity: 4 }] });
    expect(note.status).toBe(201);
    expect(figures(note.body.data)).toEqual([['Seats 4 40.00'], '40.00', '8.00', '48.00']);
  });

  it('when VAT applies to the platform fee only, then crediting the support fee credits no tax, the platform fee its own 20 %, and an amount what is left of each', async () => {
    const { contractId, planItemIds } = await taxedContract(
      [
        { name: 'Platform fee', pricingModel: 'flat', unitPrice: '100' },
        { name: 'Support', pricingModel: 'flat', unitPrice: '50' },
      ],
      ['Platform fee'],
    );
    const july = await raisedByRun(contractId, '2026-07-01');
    expect([july.subtotal, july.taxTotal, july.total]).toEqual(['150.00', '20.00', '170.00']);
    // The raise records the plan items each tax line applies to, and the items it taxed.
    const [fee, support] = july.items.map((item) => item.id);
    expect(july.data.taxes).toEqual([{ name: 'VAT', rate: '20', amount: '20.00', appliesTo: [planItemIds['Platform fee']], items: [fee] }]);

    const untaxed = await credit(july.id, { reason: 'No support in July', items: [{ invoiceItemId: support, amount: '50' }] });
    expect(untaxed.status).toBe(201);
    expect(figures(untaxed.body.data)).toEqual([['Support - 50.00'], '50.00', '0.00', '50.00']);
    const taxed = await credit(july.id, { reason: 'Platform outage', items: [{ invoiceItemId: fee, amount: '40' }] });
    expect(figures(taxed.body.data)).toEqual([['Platform fee - 40.00'], '40.00', '8.00', '48.00']);
    // What is left is 60.00 of the platform fee and its 12.00 of VAT.
    const whole = await credit(july.id, { reason: 'The rest', amount: '72' });
    expect(figures(whole.body.data)).toEqual([['Platform fee - 60.00'], '60.00', '12.00', '72.00']);
    const notes = await api.db('credit_notes').where({ invoice_id: july.id }).sum({ subtotal: 'subtotal', tax: 'tax_total', total: 'total' }).first<{ subtotal: string; tax: string; total: string }>();
    expect([Number(notes!.subtotal), Number(notes!.tax), Number(notes!.total)]).toEqual([150, 20, 170]);

    // An invoice raised before tax lines recorded their plan items (or their items) is credited by the contract's VAT of the same name and rate.
    const august = await raisedByRun(contractId, '2026-08-01');
    await api.db('invoices').where({ id: august.id }).update({ data: api.db.raw(`jsonb_set(data, '{taxes,0}', (data->'taxes'->0) - 'appliesTo' - 'items')`) });
    const older = await credit(august.id, { reason: 'No support in August', items: [{ invoiceItemId: august.items[1]!.id, amount: '50' }] });
    expect(figures(older.body.data)).toEqual([['Support - 50.00'], '50.00', '0.00', '50.00']);
  });

  it('when a plan change credited the taxed fee of an invoice, then what is left to credit counts that credit with the fee’s own VAT', async () => {
    const { contractId, contractPlanId } = await taxedContract(
      [
        { name: 'Platform fee', pricingModel: 'flat', unitPrice: '31' },
        { name: 'Support', pricingModel: 'flat', unitPrice: '62' },
      ],
      ['Platform fee'],
    );
    const july = await raisedByRun(contractId, '2026-07-01');
    expect([july.subtotal, july.taxTotal, july.total]).toEqual(['93.00', '6.20', '99.20']);
    const untaxed = await credit(july.id, { reason: 'No support in July', items: [{ invoiceItemId: july.items[1]!.id, amount: '62' }] });
    expect(figures(untaxed.body.data)).toEqual([['Support - 62.00'], '62.00', '0.00', '62.00']);
    // From 11 July on another plan: the change credits the platform fee's 21 days, 21.00, and 4.20 of VAT with it.
    const lite = await api.http().post('/billing/plans').set(admin()).send({ name: `Lite ${randomUUID().slice(0, 8)}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Lite fee', pricingModel: 'flat', unitPrice: '10' }] }).expect(201);
    const change = await api.http().post(`/contracts/${contractId}/plan-changes`).set(system()).send({ fromContractPlanId: contractPlanId, toPlanId: lite.body.data.id, effectiveDate: '2026-07-11' }).expect(201);
    expect(change.body.data.credits.map((line: { title: string; amount: string }) => [line.title, line.amount])).toEqual([['Platform fee', '21.00']]);
    // Left: 99.20 − 62.00 − 25.20 = 12.00, the fee's other 10.00 and its 2.00 of VAT.
    const over = await credit(july.id, { reason: 'More than is left', amount: '12.01' });
    expect([over.status, over.body.errors[0].message]).toEqual([409, expect.stringContaining('what is left to credit on the invoice: 12.00 USD')]);
    const rest = await credit(july.id, { reason: 'The rest', amount: '12' });
    expect(figures(rest.body.data)).toEqual([['Platform fee - 10.00'], '10.00', '2.00', '12.00']);
  });
});

describe('customer credit', () => {
  it('when a paid invoice is credited to the balance, then the next invoice run consumes the credit at raise, and undoing the raise gives it back', async () => {
    const own = await createTenant(api, 'credits-run');
    const auth = bearer(own.systemToken);
    const billing = await createBillingFixture(api, own);
    const first = await api.http().post('/invoices').set(auth).send(invoiceBody(billing.contractPlanId)).expect(201);
    await api.http().post(`/invoices/${first.body.data.id}/raise`).set(auth).send({}).expect(200);
    await api.http().post(`/invoices/${first.body.data.id}/mark-paid`).set(auth).send({ paidDate: '2026-11-10' }).expect(200);
    await api.http().post(`/invoices/${first.body.data.id}/credit-notes`).set(auth).send({ reason: 'Outage credit', amount: '30' }).expect(201);

    await api.http().put('/organisation/settings').set(auth).send({ autoRaiseGeneratedInvoices: true }).expect(200);
    await api.http().post(`/contracts/${billing.contractId}/activate`).set(auth).send({}).expect(200);
    const run = await api.http().post('/invoice-runs').set(auth).send({ billingDate: new Date().toISOString().slice(0, 10), contractIds: [billing.contractId] }).expect(201);
    const deadline = Date.now() + 30_000;
    let status = 'running';
    while (status === 'running' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = (await api.http().get(`/invoice-runs/${run.body.data.id}`).set(auth).expect(200)).body.data.status;
    }
    expect(status).toBe('completed');
    const made = await api.http().get('/invoices').set(auth).query({ invoiceRunId: run.body.data.id }).expect(200);
    expect(made.body.data.items).toHaveLength(1);
    const invoice = made.body.data.items[0];
    expect(invoice).toMatchObject({ status: 'raised', creditsApplied: '30.00' });
    expect(Number(invoice.amountDue)).toBeCloseTo(Number(invoice.total) - 30, 2);
    const credits = await api.http().get(`/customers/${billing.customerId}/credits`).set(auth).expect(200);
    expect(credits.body.data.balances).toEqual([{ currency: 'USD', balance: '0.00' }]);
    expect(credits.body.data.ledger.items[0]).toMatchObject({ kind: 'consumption', amount: '-30.00', balanceAfter: '0.00', invoiceId: invoice.id });

    const undone = await api.http().post(`/fsm/invoice/${invoice.id}/undo`).set(auth).send({});
    expect(undone.status).toBe(200);
    expect(undone.body.data).toMatchObject({ status: 'draft', creditsApplied: '0.00', amountDue: null });
    const back = await api.http().get(`/customers/${billing.customerId}/credits`).set(auth).expect(200);
    expect(back.body.data.balances).toEqual([{ currency: 'USD', balance: '30.00' }]);
    // Raised again, it takes the credit again; paid, the payment is what was left owing.
    const raised = await api.http().post(`/invoices/${invoice.id}/raise`).set(auth).send({}).expect(200);
    expect(raised.body.data).toMatchObject({ creditsApplied: '30.00', amountDue: invoice.amountDue });
    await api.http().post(`/invoices/${invoice.id}/mark-paid`).set(auth).send({ paidDate: '2026-11-30' }).expect(200);
    const paid = await api.db('payments').where({ invoice_id: invoice.id }).whereNull('deleted_at').select('amount');
    expect(paid.map((row) => Number(row.amount))).toEqual([Number(invoice.amountDue)]);
  });

  it('when credit paid part of an unpaid invoice, then a credit note may lower only what is still owed', async () => {
    const own = await createTenant(api, 'credits-due');
    const auth = bearer(own.systemToken);
    const billing = await createBillingFixture(api, own);
    await api.http().post(`/customers/${billing.customerId}/credits`).set(auth).send({ kind: 'purchase', amount: '80', currency: 'USD', reason: 'Prepaid' }).expect(201);
    const created = await api.http().post('/invoices').set(auth).send(invoiceBody(billing.contractPlanId)).expect(201);
    const raised = await api.http().post(`/invoices/${created.body.data.id}/raise`).set(auth).send({}).expect(200);
    expect(raised.body.data).toMatchObject({ total: '100.00', creditsApplied: '80.00', amountDue: '20.00' });
    // What is owed is what ageing counts.
    const ageing = await api.http().get('/collections').set(auth).expect(200);
    expect(ageing.body.data.currencies).toMatchObject([{ currency: 'USD', total: '20.00', invoices: 1 }]);
    const over = await api.http().post(`/invoices/${created.body.data.id}/credit-notes`).set(auth).send({ reason: 'Too much while unpaid', amount: '20.01' });
    expect(over.status).toBe(409);
    expect(over.body.errors[0].message).toMatch(/owes 20\.00 USD/);
    await api.http().post(`/invoices/${created.body.data.id}/credit-notes`).set(auth).send({ reason: 'The rest', amount: '20' }).expect(201);
    const read = await api.http().get(`/invoices/${created.body.data.id}`).set(auth).expect(200);
    expect(read.body.data.amountDue).toBe('0.00');
    await api.http().post(`/invoices/${created.body.data.id}/mark-paid`).set(auth).send({ paidDate: '2026-11-30' }).expect(200);
    expect(await api.db('payments').where({ invoice_id: created.body.data.id }).whereNull('deleted_at')).toEqual([]);
    // Nothing was paid in money, so nothing can be paid back: the credit goes to the balance instead.
    const refund = await api.http().post(`/invoices/${created.body.data.id}/credit-notes`).set(auth).send({ reason: 'Refund of credit', amount: '10', refund: true });
    expect(refund.status).toBe(409);
    expect(refund.body.errors[0].message).toMatch(/refund: false/);
    await api.http().post(`/invoices/${created.body.data.id}/credit-notes`).set(auth).send({ reason: 'Back to the balance', amount: '10' }).expect(201);
  });

  it('when an invoice is raised with a total below zero, then it owes nothing and what is below zero is the customer’s credit, taken back while the invoice does not stand', async () => {
    const own = await createTenant(api, 'credits-below-zero');
    const auth = bearer(own.systemToken);
    const billing = await createBillingFixture(api, own);
    const balance = async () => (await api.http().get(`/customers/${billing.customerId}/credits`).set(auth).expect(200)).body.data.balances;
    const goodwill = await api
      .http()
      .post('/invoices')
      .set(auth)
      .send(invoiceBody(billing.contractPlanId, [{ title: 'Goodwill', quantity: 1, price: -40.5 }]))
      .expect(201);
    const id = goodwill.body.data.id as string;
    const raised = await api.http().post(`/invoices/${id}/raise`).set(auth).send({}).expect(200);
    expect(raised.body.data).toMatchObject({ status: 'raised', total: '-40.50', creditsApplied: '0.00', creditedToBalance: '40.50', amountDue: '0.00' });
    expect(await balance()).toEqual([{ currency: 'USD', balance: '40.50' }]);
    const entry = (await api.http().get(`/customers/${billing.customerId}/credits`).set(auth).expect(200)).body.data.ledger.items[0];
    expect(entry).toMatchObject({ kind: 'adjustment', amount: '40.50', invoiceId: id });
    // Nothing to collect, and marking it paid records no payment.
    const ageing = await api.http().get('/collections').set(auth).expect(200);
    expect(ageing.body.data.currencies).toEqual([]);
    // Its document shows where the money went.
    const pdf = pdfText((await api.http().get(`/invoices/${id}/pdf`).set(auth).buffer(true).parse(binary).expect(200)).body as Buffer);
    expect(pdf).toMatch(/Added to your credit balance\s+40\.50/);
    expect(pdf).toMatch(/Amount due USD\s+0\.00/);

    // Undoing the raise takes the credit back; raised again, it gives it again.
    const undone = await api.http().post(`/fsm/invoice/${id}/undo`).set(auth).send({}).expect(200);
    expect(undone.body.data).toMatchObject({ status: 'draft', creditedToBalance: '0.00', amountDue: null });
    expect(await balance()).toEqual([{ currency: 'USD', balance: '0.00' }]);
    await api.http().post(`/invoices/${id}/raise`).set(auth).send({}).expect(200);
    expect(await balance()).toEqual([{ currency: 'USD', balance: '40.50' }]);

    // Cancelled, the credit goes; restored, it comes back.
    const cancelled = await api.http().put(`/invoices/${id}`).set(auth).send({ status: 'cancelled' }).expect(200);
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled', creditedToBalance: '0.00' });
    expect(await balance()).toEqual([{ currency: 'USD', balance: '0.00' }]);
    const restored = await api.http().post(`/fsm/invoice/${id}/undo`).set(auth).send({}).expect(200);
    expect(restored.body.data).toMatchObject({ status: 'raised', creditedToBalance: '40.50', amountDue: '0.00' });
    expect(await balance()).toEqual([{ currency: 'USD', balance: '40.50' }]);

    // The next invoice takes that credit; the goodwill invoice can then no longer be cancelled.
    const next = await api.http().post('/invoices').set(auth).send(invoiceBody(billing.contractPlanId)).expect(201);
    const nextRaised = await api.http().post(`/invoices/${next.body.data.id}/raise`).set(auth).send({}).expect(200);
    expect(nextRaised.body.data).toMatchObject({ total: '100.00', creditsApplied: '40.50', amountDue: '59.50' });
    const refused = await api.http().put(`/invoices/${id}`).set(auth).send({ status: 'cancelled' });
    expect(refused.status).toBe(409);
    expect(refused.body.errors[0].message).toMatch(/credit balance is 0\.00/);
    expect((await api.http().get(`/invoices/${id}`).set(auth).expect(200)).body.data).toMatchObject({ status: 'raised', creditedToBalance: '40.50' });
    await api.http().post(`/invoices/${id}/mark-paid`).set(auth).send({ paidDate: '2026-11-30' }).expect(200);
    expect(await api.db('payments').where({ invoice_id: id }).whereNull('deleted_at')).toEqual([]);
  });

  it('when credit is granted and bought, then the ledger keeps a running balance in each currency', async () => {
    const own = await createTenant(api, 'credits');
    const customer = await api.http().post('/customers').set(bearer(own.systemToken)).send({ name: 'Prepaid Co', currency: 'EUR' }).expect(201);
    const path = `/customers/${customer.body.data.id}/credits`;
    await api.http().post(path).set(bearer(own.systemToken)).send({ kind: 'grant', amount: '25', currency: 'EUR', reason: 'Welcome credit' }).expect(201);
    const bought = await api.http().post(path).set(bearer(own.systemToken)).send({ kind: 'purchase', amount: '100.50', currency: 'EUR', reason: 'Prepaid pack' }).expect(201);
    expect(bought.body.data).toMatchObject({ kind: 'purchase', amount: '100.50', balanceAfter: '125.50' });
    await api.http().post(path).set(bearer(own.systemToken)).send({ kind: 'grant', amount: '10', currency: 'JPY', reason: 'Yen' }).expect(201);
    const read = await api.http().get(path).set(bearer(own.systemToken)).expect(200);
    expect(read.body.data.balances).toEqual([
      { currency: 'EUR', balance: '125.50' },
      { currency: 'JPY', balance: '10' },
    ]);
    expect(read.body.data.ledger.items.map((entry: { kind: string }) => entry.kind)).toEqual(['grant', 'purchase', 'grant']);
    const odd = await api.http().post(path).set(bearer(own.systemToken)).send({ kind: 'grant', amount: '1.5', currency: 'JPY', reason: 'Half a yen' });
    expect(odd.status).toBe(400);
    await api.http().get(`/customers/${fixture.customerId}/credits`).set(bearer(own.systemToken)).expect(404);
  });
});
