import { AppError } from '../../src/domain/errors';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody, type BillingFixture } from './support/billing-fixtures';
import { binary, pdfText } from './support/read-back';
import { recordHistory } from './support/record-history';
import { capturedMail } from './support/smtp-capture';
import { utcToday } from '../support/calendar';
import { createServices, serviceDepsFrom } from '../../src/services';

let api: TestApi;
let tenant: Tenant;
let fixture: BillingFixture;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'invoices');
  fixture = await createBillingFixture(api, tenant);
});
afterAll(() => api.close());

const auth = () => bearer(tenant.systemToken);

async function createInvoice(items?: Parameters<typeof invoiceBody>[1]) {
  const res = await api.http().post('/invoices').set(auth()).send(invoiceBody(fixture.contractPlanId, items));
  expect(res.status).toBe(201);
  return res.body.data as { id: string; status: string };
}

const post = (id: string, action: string, body: object = {}) => api.http().post(`/invoices/${id}/${action}`).set(auth()).send(body);
const fsm = (id: string, action: string, body: object = {}) => api.http().post(`/fsm/invoice/${id}/${action}`).set(auth()).send(body);
const revenueOf = (id: string) => api.db('revenue_records').where({ invoice_id: id }).orderBy('period').select('period', 'amount', 'status');
const paymentsOf = (id: string) => api.db('payments').where({ invoice_id: id }).select('amount', 'deleted_at');

describe('create', () => {
  it('when an invoice is created, then it is a draft with its items and its lifecycle workflow runs', async () => {
    const invoice = await createInvoice();
    expect(invoice).toMatchObject({ status: 'draft', number: null, ContractPlanId: fixture.contractPlanId, OrganisationId: tenant.organisationId, currency: 'USD' });
    const description = await api.temporal.client.workflow.getHandle(`invoice:${invoice.id}`).describe();
    expect(description.status.name).toBe('RUNNING');
    expect(description.searchAttributes.OrganisationId).toEqual([tenant.organisationId]);
    expect(description.searchAttributes.CustomerId).toEqual([fixture.customerId]);
    expect(description.searchAttributes.ContractId).toEqual([fixture.contractId]);
  });

  it("when invoices are listed by contract, then only that contract's come back", async () => {
    const mine = await createInvoice();
    const other = await createBillingFixture(api, tenant);
    const theirs = await api.http().post('/invoices').set(auth()).send(invoiceBody(other.contractPlanId)).expect(201);
    const listed = async (contractId: string) => (await api.http().get('/invoices').query({ contractId, limit: 100 }).set(auth()).expect(200)).body.data.items.map((invoice: { id: string }) => invoice.id);
    expect(await listed(fixture.contractId)).toContain(mine.id);
    expect(await listed(fixture.contractId)).not.toContain(theirs.body.data.id);
    expect(await listed(other.contractId)).toEqual([theirs.body.data.id]);
  });

  it("when the contract plan is another organisation's, then 404", async () => {
    const other = await createTenant(api, 'invoices-other');
    const res = await api.http().post('/invoices').set(bearer(other.systemToken)).send(invoiceBody(fixture.contractPlanId));
    expect(res.status).toBe(404);
  });
});

describe('lifecycle', () => {
  it('when an invoice is raised, sent and paid, then each step shows in the record, the payment and the revenue', async () => {
    const invoice = await createInvoice([
      { title: 'Platform fee', quantity: 1, price: 100 },
      { title: 'API calls', quantity: 1234, price: 0.0125 },
    ]);
    const raised = await post(invoice.id, 'raise');
    expect(raised.status).toBe(200);
    expect(raised.body.data).toMatchObject({ status: 'raised', subtotal: '115.43', total: '115.43', baseCurrency: 'USD', baseTotal: '115.43' });
    expect(raised.body.data.number).toMatch(/^INV-\d{6}$/);
    expect(raised.body.data.items.map((item: { amount: string }) => item.amount)).toEqual(['100.00', '15.43']);
    expect(await revenueOf(invoice.id)).toHaveLength(2);
    expect((await revenueOf(invoice.id)).every((r) => r.status === 'recognised')).toBe(true);

    const sent = await post(invoice.id, 'send');
    expect(sent.body.data.status).toBe('sent');
    expect(sent.body.data.data.delivery.sentTo.sort()).toEqual([...fixture.contactEmails].sort());
    // By its Message-ID: an invoice dated in the past may also have been reminded by now.
    const mail = capturedMail(process.env.TEST_MAIL_DIR!).find((message) => message.includes(sent.body.data.data.delivery.messageId as string));
    expect(mail).toBeDefined();
    expect(mail).toContain(`Invoice ${raised.body.data.number}`);
    expect(mail).toContain('application/pdf');

    const paid = await post(invoice.id, 'mark-paid', { paidDate: '2026-11-15' });
    expect(paid.body.data).toMatchObject({ status: 'paid', paidDate: '2026-11-15' });
    expect(await paymentsOf(invoice.id)).toEqual([{ amount: '115.4300', deleted_at: null }]);
    expect((await revenueOf(invoice.id)).every((r) => r.status === 'collected')).toBe(true);
    await recordHistory(api, `invoice:${invoice.id}`, 'invoice-raise-send-pay');
  });

  it('when every step is undone in turn, then each compensation runs and the number stays reserved', async () => {
    const invoice = await createInvoice();
    const paid = await fsm(invoice.id, 'transition', { action: 'markPaid', paidDate: '2026-11-20T10:00:00Z' });
    expect(paid.body.data.status).toBe('paid');
    const number = paid.body.data.number;

    const toSent = await fsm(invoice.id, 'undo');
    expect(toSent.body.data.status).toBe('sent');
    expect((await paymentsOf(invoice.id))[0]!.deleted_at).not.toBeNull();
    expect((await revenueOf(invoice.id)).every((r) => r.status === 'recognised')).toBe(true);

    expect((await fsm(invoice.id, 'undo')).body.data.status).toBe('raised');
    const toDraft = await fsm(invoice.id, 'undo');
    expect(toDraft.body.data).toMatchObject({ status: 'draft', number });
    expect(await revenueOf(invoice.id)).toHaveLength(0);

    const nothing = await fsm(invoice.id, 'undo');
    expect(nothing.status).toBe(409);
    expect(nothing.body).toMatchObject({ status: 'error', errors: [{ code: 1003 }] });

    const again = await post(invoice.id, 'raise');
    expect(again.body.data.number).toBe(number);
    await recordHistory(api, `invoice:${invoice.id}`, 'invoice-pay-and-undo-everything');
  });

  it('when the paid date has not come yet, then 400 names body.paidDate and the invoice stays unpaid; today is taken', async () => {
    const invoice = await createInvoice();
    const tomorrow = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    for (const paidDate of ['9999-12-31', tomorrow, new Date(Date.now() + 3_600_000).toISOString()]) {
      const refused = await post(invoice.id, 'mark-paid', { paidDate });
      expect([paidDate, refused.status, refused.body.errors?.[0]?.path]).toEqual([paidDate, 400, 'body.paidDate']);
    }
    const viaStatus = await api.http().put(`/invoices/${invoice.id}`).set(auth()).send({ status: 'paid', paidDate: tomorrow });
    expect([viaStatus.status, viaStatus.body.errors?.[0]?.path]).toEqual([400, 'body.paidDate']);
    expect((await api.http().get(`/invoices/${invoice.id}`).set(auth()).expect(200)).body.data.status).not.toBe('paid');
    expect(await paymentsOf(invoice.id)).toEqual([]);
    await post(invoice.id, 'mark-paid', { paidDate: utcToday() }).expect(200);
  });

  it('when the paid date is the first day of the year 1, then the invoice is paid on it, as on any other day', async () => {
    const invoice = await createInvoice();
    const paid = await post(invoice.id, 'mark-paid', { paidDate: '0001-01-01' });
    expect([paid.status, paid.body.data?.paidDate]).toEqual([200, '0001-01-01']);
    const [payment] = await api.db('payments').where({ invoice_id: invoice.id }).select(api.db.raw(`to_char(paid_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS AD') as paid_at`));
    expect(payment.paid_at).toBe('0001-01-01 00:00:00 AD');
  });

  it('when a paid invoice is cancelled and the cancel is undone, then the payment is reversed and restored', async () => {
    const invoice = await createInvoice();
    await post(invoice.id, 'mark-paid', { paidDate: '2026-11-15' }).expect(200);
    const cancelled = await api.http().put(`/invoices/${invoice.id}`).set(auth()).send({ status: 'cancelled', comments: 'customer dispute' });
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled', comments: 'customer dispute', paidDate: null });
    expect((await paymentsOf(invoice.id))[0]!.deleted_at).not.toBeNull();
    expect((await revenueOf(invoice.id)).every((r) => r.status === 'reversed')).toBe(true);

    const restored = await fsm(invoice.id, 'undo');
    expect([restored.body.data.status, restored.body.data.paidDate]).toEqual(['paid', '2026-11-15']);
    expect((await paymentsOf(invoice.id))[0]!.deleted_at).toBeNull();
    expect((await revenueOf(invoice.id)).every((r) => r.status === 'collected')).toBe(true);
    await recordHistory(api, `invoice:${invoice.id}`, 'invoice-cancel-paid-and-undo');
  });

  it('when no FX rate to the base currency applies on the invoice date, then raise answers 422 with code 1012 naming the rate and the date, and takes no number', async () => {
    const euro = await createTenant(api, 'invoices-eur');
    const euroFixture = await createBillingFixture(api, euro);
    await api.http().put('/organisation/settings').set(bearer(euro.adminToken)).send({ baseCurrency: 'EUR' }).expect(200);
    const created = await api.http().post('/invoices').set(bearer(euro.systemToken)).send(invoiceBody(euroFixture.contractPlanId)).expect(201);
    const res = await api.http().post(`/invoices/${created.body.data.id}/raise`).set(bearer(euro.systemToken));
    const date = String(created.body.data.date);
    const missing = AppError.missingFxRate('USD', 'EUR', date).message;
    expect([res.status, res.body]).toEqual([422, { status: 'error', message: missing, errors: [{ code: 1012, message: missing }] }]);
    const unchanged = await api.http().get(`/invoices/${created.body.data.id}`).set(bearer(euro.systemToken));
    expect(unchanged.body.data).toMatchObject({ status: 'draft', number: null });
  });

  it('when a step arrives under a new seq from a state the invoice has left (a workflow that gave up on a committed step), then it is refused and nothing is written twice', async () => {
    const invoice = await createInvoice();
    await post(invoice.id, 'mark-paid', { paidDate: '2026-11-20' }).expect(200);
    const lifecycle = createServices(serviceDepsFrom(api.config, api.db)).invoiceLifecycle;
    const again = { invoiceId: invoice.id, organisationId: tenant.organisationId, seq: 99, from: 'sent' as const };
    await expect(lifecycle.pay({ ...again, paidDate: '2026-11-21' })).rejects.toMatchObject({ kind: 'conflict', message: 'the invoice is paid, not sent' });
    await expect(lifecycle.send({ ...again, from: 'raised' })).rejects.toMatchObject({ kind: 'conflict' });
    expect(await paymentsOf(invoice.id)).toHaveLength(1);
  });

  it('when the workflow of a sent invoice is terminated, then the next Update starts it again from Postgres: undo reverts the send', async () => {
    const invoice = await createInvoice();
    await post(invoice.id, 'raise').expect(200);
    await post(invoice.id, 'send').expect(200);
    await api.temporal.client.workflow.getHandle(`invoice:${invoice.id}`).terminate('operator test');
    const undone = await fsm(invoice.id, 'undo');
    expect(undone.status).toBe(200);
    expect(undone.body.data.status).toBe('raised');
    const actions = await api.http().get(`/fsm/invoice/${invoice.id}/actions`).set(auth());
    expect(actions.body.data.state).toBe('raised');
    expect(actions.body.data.allowedActions).toContain('undo');
    await post(invoice.id, 'send').expect(200);
    const transitions = await api.db('invoice_transitions').where({ invoice_id: invoice.id }).orderBy('seq').select('seq', 'step', 'undone_at');
    expect(transitions.map((t) => [t.seq, t.step, t.undone_at === null])).toEqual([[1, 'raise', true], [2, 'send', false], [3, 'send', true]]);
  });

  it('when an illegal transition is asked, then 409 and nothing changes', async () => {
    const invoice = await createInvoice();
    const send = await post(invoice.id, 'send');
    expect(send.status).toBe(409);
    expect(send.body.errors[0]).toMatchObject({ code: 1003 });
    const unchanged = await api.http().get(`/invoices/${invoice.id}`).set(auth());
    expect(unchanged.body.data.status).toBe('draft');
    const actions = await api.http().get(`/fsm/invoice/${invoice.id}/actions`).set(auth());
    expect(actions.body.data).toMatchObject({ state: 'draft', allowedActions: ['raise', 'markPaid', 'cancel'] });
  });

  it('when the FSM states are read, then they list every state and the current one', async () => {
    const invoice = await createInvoice();
    await post(invoice.id, 'raise').expect(200);
    const states = await api.http().get(`/fsm/invoice/${invoice.id}/states`).set(auth());
    expect(states.body.data).toMatchObject({ state: 'raised', states: ['draft', 'raised', 'sent', 'paid', 'cancelled'], transitions: 1 });
  });
});

describe('PUT /invoices/{id}', () => {
  it('when paid has no paid date, then 400', async () => {
    const invoice = await createInvoice();
    const res = await api.http().put(`/invoices/${invoice.id}`).set(auth()).send({ status: 'paid' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'body.paidDate' })]);
  });

  it('when a draft is set to paid, then the missing steps run first and the record comes back', async () => {
    const invoice = await createInvoice();
    const res = await api.http().put(`/invoices/${invoice.id}`).set(auth()).send({ status: 'paid', paidDate: '2026-11-30T12:00:00Z' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: invoice.id, status: 'paid', paidDate: '2026-11-30', date: '2026-11-01', fromDate: '2026-11-01', toDate: '2026-11-30', deletedAt: null });
    expect(res.body.data.number).toEqual(expect.any(String));
    expect(await api.db('invoice_transitions').where({ invoice_id: invoice.id }).orderBy('seq').pluck('step')).toEqual(['raise', 'send', 'pay']);
  });

  it('when a cancelled invoice is set to paid, then 409', async () => {
    const invoice = await createInvoice();
    await api.http().put(`/invoices/${invoice.id}`).set(auth()).send({ status: 'cancelled' }).expect(200);
    const res = await api.http().put(`/invoices/${invoice.id}`).set(auth()).send({ status: 'paid', paidDate: '2026-11-30' });
    expect(res.status).toBe(409);
  });

  it('when the status asked is the current one, then nothing runs and 200', async () => {
    const invoice = await createInvoice();
    await api.http().put(`/invoices/${invoice.id}`).set(auth()).send({ status: 'cancelled' }).expect(200);
    const again = await api.http().put(`/invoices/${invoice.id}`).set(auth()).send({ status: 'cancelled' });
    expect(again.status).toBe(200);
    expect(await api.db('invoice_transitions').where({ invoice_id: invoice.id }).count({ n: '*' })).toEqual([{ n: '1' }]);
  });
});

describe('items', () => {
  it('when the invoice is a draft, then items can be added and deleted; once raised, 409', async () => {
    const invoice = await createInvoice();
    const added = await api.http().post(`/invoices/${invoice.id}/items`).set(auth()).send({ title: 'Setup', quantity: 1, price: '50' });
    expect(added.status).toBe(201);
    await api.http().delete(`/invoices/${invoice.id}/items/${added.body.data.id}`).set(auth()).expect(200);
    const items = await api.http().get(`/invoices/${invoice.id}/items`).set(auth());
    expect(items.body.data).toHaveLength(1);
    await post(invoice.id, 'raise').expect(200);
    const locked = await api.http().delete(`/invoices/${invoice.id}/items/${items.body.data[0].id}`).set(auth());
    expect(locked.status).toBe(409);
    await api.http().post(`/invoices/${invoice.id}/items`).set(auth()).send({ title: 'Late', quantity: 1, price: 1 }).expect(409);
  });
});

describe('numbering', () => {
  it('when 100 invoices are raised at once, then they get 1 to 100 with no gap and no duplicate; another organisation counts on its own', async () => {
    const numbering = await createTenant(api, 'numbering');
    const numberingFixture = await createBillingFixture(api, numbering);
    const ids: string[] = [];
    for (let i = 0; i < 100; i += 1) {
      // Dated today: not overdue once raised, so no reminder runs beside the hundred raises.
      const res = await api.http().post('/invoices').set(bearer(numbering.systemToken)).send({ ...invoiceBody(numberingFixture.contractPlanId), invoiceData: { date: utcToday() } });
      ids.push(res.body.data.id);
    }
    const raised = await Promise.all(ids.map((id) => api.http().post(`/invoices/${id}/raise`).set(bearer(numbering.systemToken))));
    expect(raised.map((res) => res.status)).toEqual(ids.map(() => 200));
    const numbers = raised.map((res) => Number(res.body.data.number.replace('INV-', ''))).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));

    const second = await createTenant(api, 'numbering-2');
    const secondFixture = await createBillingFixture(api, second);
    const own = await api.http().post('/invoices').set(bearer(second.systemToken)).send(invoiceBody(secondFixture.contractPlanId));
    const first = await api.http().post(`/invoices/${own.body.data.id}/raise`).set(bearer(second.systemToken));
    expect(first.body.data.number).toBe('INV-000001');
  });
});

describe('PDF', () => {
  it('when the PDF of a raised invoice is read as text, then it shows the number, the totals and the item titles', async () => {
    const invoice = await createInvoice([
      { title: 'Platform fee', quantity: 1, price: 100 },
      { title: 'Premium support', quantity: 2, price: 49.5 },
    ]);
    const raised = await post(invoice.id, 'raise');
    const res = await api.http().get(`/invoices/${invoice.id}/pdf`).set(auth()).buffer(true).parse(binary);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    const text = pdfText(res.body as Buffer);
    expect(text).toContain(raised.body.data.number);
    expect(text).toContain('Platform fee');
    expect(text).toContain('Premium support');
    expect(text).toContain('199.00');
    expect(text).toContain('Seller Ltd');
    expect(text).toContain('Customer GmbH');
  });
});

describe('revenue', () => {
  it('when revenue is listed, then it is paged and needs both of its actions', async () => {
    const invoice = await createInvoice();
    await post(invoice.id, 'raise').expect(200);
    const res = await api.http().get('/revenue').query({ invoiceId: invoice.id, limit: 100 }).set(auth());
    expect(res.body.data).toMatchObject({ page: 1, limit: 100, total: 1 });
    expect(res.body.data.items[0]).toMatchObject({ invoiceId: invoice.id, period: '2026-11-01', amount: '100.00', status: 'recognised' });
    await api.http().get('/revenue').query({ limit: 101 }).set(auth()).expect(400);
  });

  it('when an item spans six centuries, then its 7,524 monthly records are written in one go and the invoice raises', async () => {
    const body = invoiceBody(fixture.contractPlanId);
    body.invoiceItems = [{ ...body.invoiceItems[0]!, fromDate: '1400-01-01', toDate: '2026-12-31' }];
    const created = await api.http().post('/invoices').set(auth()).send(body).expect(201);
    await post(created.body.data.id, 'raise').expect(200);
    const [counted] = await api.db('revenue_records').where({ invoice_id: created.body.data.id }).select(api.db.raw('count(*)::int AS n, sum(amount)::text AS total'));
    expect(counted).toEqual({ n: 7524, total: '100.0000' });
  });

  it('when an item is synced, then its records are derived again', async () => {
    const invoice = await createInvoice();
    const raised = await post(invoice.id, 'raise');
    await api.db('revenue_records').where({ invoice_id: invoice.id }).delete();
    const synced = await api.http().post('/revenue/sync').set(auth()).send({ invoiceItemId: raised.body.data.items[0].id });
    expect(synced.body.data).toEqual({ invoiceItemId: raised.body.data.items[0].id, records: 1 });
    expect(await revenueOf(invoice.id)).toHaveLength(1);
  });

  it('when an item the organisation does not have is synced, then 404, and no workflow is started to fail', async () => {
    const invoiceItemId = `ii_unknown${Date.now()}`;
    const res = await api.http().post('/revenue/sync').set(auth()).send({ invoiceItemId });
    expect([res.status, res.body.errors]).toEqual([404, [{ code: 1002, message: expect.stringContaining('Invoice item') }]]);
    const started = await api.temporal.client.workflow.getHandle(`revenue-sync:${tenant.organisationId}:${invoiceItemId}`).describe().then(
      () => true,
      () => false,
    );
    expect(started).toBe(false);
  });
});

describe('files', () => {
  it('when a document is uploaded, then it is listed and downloads byte for byte; only an Admin deletes it', async () => {
    const invoice = await createInvoice();
    const content = Buffer.from('%PDF-1.4 signed purchase order\n');
    const uploaded = await api.http().post(`/invoices/${invoice.id}/files`).set(auth()).attach('file', content, { filename: 'po.pdf', contentType: 'application/pdf' });
    expect(uploaded.status).toBe(201);
    expect(uploaded.body.data).toMatchObject({ filename: 'po.pdf', contentType: 'application/pdf', size: content.length });
    const fileId = uploaded.body.data.id;
    const listed = await api.http().get(`/invoices/${invoice.id}/files`).set(auth());
    expect(listed.body.data.map((file: { id: string }) => file.id)).toEqual([fileId]);
    const downloaded = await api.http().get(`/invoices/${invoice.id}/files/${fileId}`).set(auth()).buffer(true).parse((response, done) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => done(null, Buffer.concat(chunks)));
    });
    expect(Buffer.compare(downloaded.body as Buffer, content)).toBe(0);
    const forbidden = await api.http().delete(`/invoices/${invoice.id}/files/${fileId}`).set(auth());
    expect(forbidden.body).toEqual({ status: 'error', message: 'Forbidden', errors: [] });
    await api.http().delete(`/invoices/${invoice.id}/files/${fileId}`).set(bearer(tenant.adminToken)).expect(200);
    await api.http().get(`/invoices/${invoice.id}/files/${fileId}`).set(auth()).expect(404);
  });

  it('when a file is over the upload limit, then 413', async () => {
    const limited = await startTestApi({ UPLOAD_LIMIT_BYTES: '2048' });
    try {
      const invoice = await createInvoice();
      const res = await limited.http().post(`/invoices/${invoice.id}/files`).set(auth()).attach('file', Buffer.alloc(4096, 1), 'big.bin');
      expect(res.status).toBe(413);
      expect(res.body.errors[0]).toMatchObject({ code: 1005 });
    } finally {
      await limited.close();
    }
  });

  it('when no file field is sent, or another field beside it, then 400 by its path; a body of another type is 415', async () => {
    const invoice = await createInvoice();
    const res = await api.http().post(`/invoices/${invoice.id}/files`).set(auth()).field('note', 'no file');
    expect(res.status).toBe(400);
    const beside = await api.http().post(`/invoices/${invoice.id}/files`).set(auth()).field('note', 'kept?').attach('file', Buffer.from('hello'), 'doc.txt');
    expect([beside.status, beside.body.errors]).toEqual([400, [{ code: 1001, path: 'body.note', message: 'is not a property this request takes' }]]);
    const elsewhere = await api.http().post(`/invoices/${invoice.id}/files`).set(auth()).attach('other', Buffer.from('hello'), 'doc.txt');
    expect([elsewhere.status, elsewhere.body.errors]).toEqual([400, [{ code: 1001, path: 'body.other', message: 'is not a property this request takes: the file goes in the field "file"' }]]);
    const json = await api.http().post(`/invoices/${invoice.id}/files`).set(auth()).send({});
    expect([json.status, json.body.errors]).toEqual([415, [{ code: 1009, path: 'headers.content-type', message: 'The body must be sent as multipart/form-data' }]]);
    expect((await api.http().get(`/invoices/${invoice.id}/files`).set(auth()).expect(200)).body.data).toEqual([]);
  });
});

describe('sync items', () => {
  it('when a draft is synced, then its plan items are priced for the period and hand-added items stay', async () => {
    const invoice = await createInvoice([{ title: 'Hand-added setup', quantity: 1, price: 10 }]);
    const synced = await api.http().post(`/invoices/${invoice.id}/sync-items`).set(auth());
    expect(synced.status).toBe(200);
    const titles = synced.body.data.items.map((item: { title: string; planItemId: string | null; price: string }) => [item.title, item.planItemId, item.price]);
    expect(titles).toEqual(expect.arrayContaining([['Hand-added setup', null, '10'], ['Platform fee', fixture.planItemId, '100']]));
    const again = await api.http().post(`/invoices/${invoice.id}/sync-items`).set(auth());
    expect(again.body.data.items).toHaveLength(2);
    await post(invoice.id, 'raise').expect(200);
    await api.http().post(`/invoices/${invoice.id}/sync-items`).set(auth()).expect(409);
  });
});

describe('custom lifecycle machines', () => {
  it('when a machine renames the states and actions, then the lifecycle reads and moves in its names, running the built-in effects', async () => {
    const machine = await api
      .http()
      .post('/fsm/machines')
      .set(auth())
      .send({
        objectType: 'invoice',
        name: `approval-${Date.now()}`,
        states: [
          { name: 'Prepared', builtIn: 'draft' },
          { name: 'Approved', builtIn: 'raised' },
          { name: 'Settled', builtIn: 'paid' },
        ],
        transitions: [
          { action: 'approve', from: 'Prepared', to: 'Approved', effect: 'raise' },
          { action: 'settle', from: 'Approved', to: 'Settled', effect: 'markPaid' },
        ],
      });
    expect(machine.status).toBe(201);
    const machineId = machine.body.data.id;
    expect((await api.http().get('/fsm/machines').set(auth())).body.data.items.map((m: { id: string }) => m.id)).toContain(machineId);

    const invoice = await createInvoice();
    const states = await api.http().get(`/fsm/invoice/${invoice.id}/states`).query({ machineId }).set(auth());
    expect(states.body.data).toMatchObject({ state: 'Prepared', states: ['Prepared', 'Approved', 'Settled'], allowedActions: ['approve'] });
    await fsm(invoice.id, 'transition', { machineId, action: 'settle', paidDate: '2026-11-20' }).expect(409);
    const approved = await fsm(invoice.id, 'transition', { machineId, action: 'approve' });
    expect(approved.body.data).toMatchObject({ status: 'raised', number: expect.any(String) });
    const settled = await fsm(invoice.id, 'transition', { machineId, action: 'settle', paidDate: '2026-11-20' });
    expect(settled.body.data.status).toBe('paid');
  });

  it('when a machine binds a transition to an effect that cannot make that move, then 400', async () => {
    const res = await api
      .http()
      .post('/fsm/machines')
      .set(auth())
      .send({ objectType: 'invoice', name: 'broken', states: [{ name: 'A', builtIn: 'draft' }, { name: 'B', builtIn: 'paid' }], transitions: [{ action: 'go', from: 'A', to: 'B', effect: 'raise' }] });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ code: 1001, path: 'body.transitions.0' });
  });
});

describe('concurrent transitions', () => {
  it('when the same invoice is raised five times at once, then one raise runs and the others answer 409', async () => {
    const invoice = await createInvoice();
    const responses = await Promise.all(Array.from({ length: 5 }, () => post(invoice.id, 'raise')));
    expect(responses.map((res) => res.status).sort()).toEqual([200, 409, 409, 409, 409]);
    expect(await api.db('invoice_transitions').where({ invoice_id: invoice.id }).pluck('step')).toEqual(['raise']);
  });
});
