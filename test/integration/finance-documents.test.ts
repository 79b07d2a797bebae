import { htmlToText } from '../../src/mail/html-text';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody, invoicesOfRun, waitForRun, type BillingFixture } from './support/billing-fixtures';
import { binary, mailWith, pdfText } from './support/read-back';

let api: TestApi;
let tenant: Tenant;
/** A customer in London, in GBP, in the organisation's locale (en-GB). */
let uk: BillingFixture;
/** A customer in Berlin, in EUR, with its own locale (de-DE). */
let german: BillingFixture;

const PAYMENT_DETAILS = {
  accountHolder: 'Seller Ltd',
  accountNumber: '20-00-00 12345678',
  iban: 'gb33 bukb 2020 1555 5555 55',
  bic: 'bukbgb22',
  paymentLink: 'https://pay.example.com/seller',
  reference: 'Invoice {number}',
};

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'finance-documents');
  await api.http().put('/organisation/settings').set(admin()).send({ baseCurrency: 'GBP', locale: 'en-gb', paymentDetails: PAYMENT_DETAILS }).expect(200);
  await api.http().post('/fx-rates').set(system()).send({ fromCurrency: 'EUR', toCurrency: 'GBP', rate: '0.85', effectiveDate: '2026-01-01' }).expect(201);
  uk = await createBillingFixture(api, tenant, 'GBP', {
    sellerAddress: { line1: '1 Market Street', city: 'London', postalCode: 'EC1A 1BB', country: 'GB' },
    customerAddress: { line1: '10 Downing Street', city: 'London', postalCode: 'SW1A 2AA', country: 'GB' },
  });
  german = await createBillingFixture(api, tenant, 'EUR', {
    customer: { locale: 'de-DE' },
    customerAddress: { line1: 'Unter den Linden 1', city: 'Berlin', postalCode: '10117', country: 'DE' },
  });
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);

type Item = { title: string; quantity: number | string; price: number | string };

async function draft(fixture: BillingFixture, items: Item[], invoiceData: Record<string, unknown> = {}) {
  const body = invoiceBody(fixture.contractPlanId, items as Array<{ title: string; quantity: number; price: number }>);
  const res = await api
    .http()
    .post('/invoices')
    .set(system())
    .send({ ...body, invoiceData: { ...body.invoiceData, ...invoiceData } })
    .expect(201);
  return res.body.data as { id: string; customerReference: string | null; purchaseOrderNumber: string | null };
}

async function raised(fixture: BillingFixture, items: Item[], invoiceData: Record<string, unknown> = {}) {
  const { id } = await draft(fixture, items, invoiceData);
  const res = await api.http().post(`/invoices/${id}/raise`).set(system()).expect(200);
  return res.body.data as { id: string; number: string; total: string; dueDate: string; items: Array<{ id: string; title: string }> };
}

async function pdfOf(path: string): Promise<string> {
  const res = await api.http().get(path).set(system()).buffer(true).parse(binary).expect(200);
  return pdfText(res.body as Buffer);
}

/** The PDF's lines, their runs of spaces folded, for lines whose words must stand together. */
const lines = (text: string) => text.split('\n').map((line) => line.trim().replace(/\s{2,}/g, '  '));

describe('payment details', () => {
  it('when the organisation sets its payment details, then they are kept normalised, and wrong ones answer 400 naming the field', async () => {
    const settings = await api.http().get('/organisation/settings').set(system()).expect(200);
    expect(settings.body.data).toMatchObject({
      locale: 'en-GB',
      paymentDetails: { ...PAYMENT_DETAILS, iban: 'GB33BUKB20201555555555', bic: 'BUKBGB22' },
    });

    const refused = async (paymentDetails: object, path: string) => {
      const res = await api.http().put('/organisation/settings').set(admin()).send({ paymentDetails });
      expect(res.status).toBe(400);
      expect(res.body.errors.length).toBeGreaterThan(0);
      for (const error of res.body.errors) expect(error).toMatchObject({ code: 1001, path });
    };
    // One digit changed: the mod-97 check fails.
    await refused({ iban: 'GB33BUKB20201555555556' }, 'body.paymentDetails.iban');
    await refused({ iban: 'GB33' }, 'body.paymentDetails.iban');
    await refused({ bic: 'BUKB1B22' }, 'body.paymentDetails.bic');
    await refused({ paymentLink: 'ftp://pay.example.com' }, 'body.paymentDetails.paymentLink');
    await refused({ paymentLink: 'not a link' }, 'body.paymentDetails.paymentLink');
    await refused({ paymentLink: 'https://pay.example.com/a b\u0000' }, 'body.paymentDetails.paymentLink');
    await refused({ accountHolder: 'x'.repeat(201) }, 'body.paymentDetails.accountHolder');
    await refused({ reference: 'x'.repeat(141) }, 'body.paymentDetails.reference');
    await refused({}, 'body.paymentDetails');
    const badLocale = await api.http().put('/organisation/settings').set(admin()).send({ locale: 'not a locale' });
    expect(badLocale.status).toBe(400);
    expect(badLocale.body.errors).toEqual([expect.objectContaining({ path: 'body.locale' })]);
    const badCustomerLocale = await api.http().post('/customers').set(system()).send({ name: 'Nowhere', locale: 'zz' });
    expect(badCustomerLocale.status).toBe(400);
    expect(badCustomerLocale.body.errors).toEqual([expect.objectContaining({ path: 'body.locale' })]);
    // Nothing refused changed anything.
    expect((await api.http().get('/organisation/settings').set(system()).expect(200)).body.data).toEqual(settings.body.data);
  });

  it('when an invoice is printed, then its "Payment details" block shows the fields set, the IBAN in groups and the reference with its number', async () => {
    const invoice = await raised(uk, [{ title: 'Platform fee', quantity: 1, price: 100 }]);
    const text = await pdfOf(`/invoices/${invoice.id}/pdf`);
    const printed = lines(text);
    expect(printed).toContain('Payment details');
    expect(printed).toContain('Account holder:  Seller Ltd');
    expect(printed).toContain('Account number:  20-00-00 12345678');
    expect(printed).toContain('IBAN:  GB33 BUKB 2020 1555 5555 55');
    expect(printed).toContain('BIC:  BUKBGB22');
    expect(printed).toContain(`Reference:  Invoice ${invoice.number}`);
    expect(printed).toContain('Pay online:  https://pay.example.com/seller');
    // No bank name was set: no line for it.
    expect(text).not.toContain('Bank:');
  });

  it('when the payment details are removed, then invoices print no block', async () => {
    await api.http().put('/organisation/settings').set(admin()).send({ paymentDetails: null }).expect(200);
    try {
      const invoice = await raised(uk, [{ title: 'Platform fee', quantity: 1, price: 100 }]);
      expect(await pdfOf(`/invoices/${invoice.id}/pdf`)).not.toContain('Payment details');
    } finally {
      await api.http().put('/organisation/settings').set(admin()).send({ paymentDetails: PAYMENT_DETAILS }).expect(200);
    }
  });
});

describe('customer reference and purchase order number', () => {
  it('when an invoice is created with them, changed while a draft and printed, then they show; once raised they no longer change', async () => {
    const created = await draft(uk, [{ title: 'Platform fee', quantity: 1, price: 100 }], { customerReference: 'Cost centre 42', purchaseOrderNumber: 'PO-1000' });
    expect(created).toMatchObject({ customerReference: 'Cost centre 42', purchaseOrderNumber: 'PO-1000' });

    const changed = await api.http().patch(`/invoices/${created.id}`).set(system()).send({ purchaseOrderNumber: 'PO-2000' }).expect(200);
    expect(changed.body.data).toMatchObject({ customerReference: 'Cost centre 42', purchaseOrderNumber: 'PO-2000' });
    const cleared = await api.http().patch(`/invoices/${created.id}`).set(system()).send({ customerReference: null }).expect(200);
    expect(cleared.body.data).toMatchObject({ customerReference: null, purchaseOrderNumber: 'PO-2000' });
    await api.http().patch(`/invoices/${created.id}`).set(system()).send({ customerReference: 'Projekt Blau' }).expect(200);

    expect((await api.http().patch(`/invoices/${created.id}`).set(system()).send({})).status).toBe(400);
    const tooLong = await api.http().patch(`/invoices/${created.id}`).set(system()).send({ purchaseOrderNumber: 'P'.repeat(101) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.errors).toEqual([expect.objectContaining({ path: 'body.purchaseOrderNumber' })]);

    await api.http().post(`/invoices/${created.id}/raise`).set(system()).expect(200);
    const late = await api.http().patch(`/invoices/${created.id}`).set(system()).send({ purchaseOrderNumber: 'PO-3000' });
    expect(late.status).toBe(409);
    expect(late.body.errors).toEqual([expect.objectContaining({ code: 1003, message: expect.stringContaining('only while it is a draft') })]);

    const printed = lines(await pdfOf(`/invoices/${created.id}/pdf`));
    expect(printed).toContain('Your reference: Projekt Blau');
    expect(printed).toContain('Purchase order: PO-2000');
    const found = await api.http().get('/invoices').set(system()).query({ search: 'PO-2000' }).expect(200);
    expect(found.body.data.items.map((invoice: { id: string }) => invoice.id)).toEqual([created.id]);
  });

  it('when an invoice run is given them, then every invoice it makes carries them, and its PDF prints them', async () => {
    for (const fixture of [uk, german]) await api.http().post(`/contracts/${fixture.contractId}/activate`).set(system()).send({}).expect(200);
    const started = await api
      .http()
      .post('/invoice-runs')
      .set(system())
      .send({ billingDate: '2026-12-01', contractIds: [uk.contractId], purchaseOrderNumber: 'PO-RUN-7', customerReference: 'Annual order' })
      .expect(201);
    expect(started.body.data).toMatchObject({ purchaseOrderNumber: 'PO-RUN-7', customerReference: 'Annual order' });
    await waitForRun(api, tenant, started.body.data.id);
    const made = await api.http().get('/invoices').set(system()).query({ invoiceRunId: started.body.data.id }).expect(200);
    expect(made.body.data.items.length).toBeGreaterThan(0);
    for (const invoice of made.body.data.items) expect(invoice).toMatchObject({ purchaseOrderNumber: 'PO-RUN-7', customerReference: 'Annual order' });
    const printed = lines(await pdfOf(`/invoices/${made.body.data.items[0].id}/pdf`));
    expect(printed).toContain('Purchase order: PO-RUN-7');

    // A run given none makes invoices without them.
    const plain = await invoicesOfRun<{ purchaseOrderNumber: string | null }>(api, tenant, german.contractId, '2026-12-01');
    expect(plain.map((invoice) => invoice.purchaseOrderNumber)).toEqual(plain.map(() => null));
  });
});

describe('payments and credits', () => {
  it('when an invoice is credited and partly paid, then its PDF lists the credit note and the payment and what is still due', async () => {
    const invoice = await raised(uk, [{ title: 'Consulting', quantity: 12, price: 100 }]);
    expect(invoice.total).toBe('1200.00');
    const note = await api.http().post(`/invoices/${invoice.id}/credit-notes`).set(system()).send({ reason: 'Two days not delivered', amount: '240' }).expect(201);
    await api
      .http()
      .post('/payments')
      .set(system())
      .send({ customerId: uk.customerId, invoiceId: invoice.id, amount: '500', currency: 'GBP', paidAt: '2026-11-10T09:00:00Z', method: 'bank_transfer', reference: 'BACS-1' })
      .expect(201);

    const printed = lines(await pdfOf(`/invoices/${invoice.id}/pdf`));
    expect(printed).toContain('Payments and credits');
    expect(printed).toContain('Invoice total  1,200.00');
    const issuedOn = (note.body.data.issuedAt as string).slice(0, 10).split('-').reverse().join('/');
    expect(printed).toContain(`${issuedOn}  Credit note ${note.body.data.number}  -240.00`);
    expect(printed).toContain('10/11/2026  Payment, bank transfer, ref BACS-1  -500.00');
    expect(printed).toContain('Amount due GBP  460.00');

    // Marked paid, it records what the credit note and the part payment leave: 460.00, not 960.00.
    await api.http().post(`/invoices/${invoice.id}/mark-paid`).set(system()).send({ paidDate: '2026-11-20' }).expect(200);
    const payments = (await api.http().get('/payments').query({ invoiceId: invoice.id }).set(system()).expect(200)).body.data.items as Array<{ id: string; amount: string; method: string | null }>;
    expect(payments.map((payment) => [payment.method, payment.amount]).sort()).toEqual([['bank_transfer', '500.00'], ['invoice', '460.00']]);
    expect(lines(await pdfOf(`/invoices/${invoice.id}/pdf`))).toContain('Amount due GBP  0.00');

    // That payment is the invoice's: its reference may be added, but its amount and its day change, or it
    // goes, only by undoing the step that recorded it.
    const marked = payments.find((payment) => payment.method === 'invoice')!;
    await api.http().put(`/payments/${marked.id}`).set(system()).send({ reference: 'BACS-2' }).expect(200);
    for (const refused of [api.http().put(`/payments/${marked.id}`).set(system()).send({ amount: '1.00' }), api.http().delete(`/payments/${marked.id}`).set(system())]) {
      const res = await refused;
      expect([res.status, res.body.errors[0].message]).toEqual([409, expect.stringContaining(`marking invoice ${invoice.id} paid`)]);
    }
    // The transfer of 500.00 paid it too: deleted or lowered, it would leave the invoice paid and short.
    const transfer = payments.find((payment) => payment.method === 'bank_transfer')!;
    for (const refused of [api.http().put(`/payments/${transfer.id}`).set(system()).send({ amount: '400.00' }), api.http().delete(`/payments/${transfer.id}`).set(system())]) {
      const res = await refused;
      expect([res.status, res.body.errors[0].message]).toEqual([409, expect.stringContaining(`invoice ${invoice.id} is paid`)]);
    }
    await api.http().put(`/payments/${transfer.id}`).set(system()).send({ reference: 'BACS-1b' }).expect(200);
    // Once the mark-paid is undone, the invoice owes again and the transfer may go.
    await api.http().post(`/fsm/invoice/${invoice.id}/undo`).set(system()).send({}).expect(200);
    await api.http().delete(`/payments/${transfer.id}`).set(system()).expect(200);
  });

  it('when an invoice is paid and then credited with a refund, then the payment, the credit note and the refund are listed and nothing is due', async () => {
    const invoice = await raised(uk, [{ title: 'Seats', quantity: 5, price: 10 }]);
    await api.http().post(`/invoices/${invoice.id}/mark-paid`).set(system()).send({ paidDate: '2026-11-20' }).expect(200);
    const note = await api.http().post(`/invoices/${invoice.id}/credit-notes`).set(system()).send({ reason: 'Returned', amount: '20', refund: true }).expect(201);

    const printed = lines(await pdfOf(`/invoices/${invoice.id}/pdf`));
    expect(printed).toContain('20/11/2026  Payment  -50.00');
    expect(printed.some((line) => line.endsWith(`Credit note ${note.body.data.number}  -20.00`))).toBe(true);
    expect(printed.some((line) => line.endsWith(`Refund of credit note ${note.body.data.number}  20.00`))).toBe(true);
    expect(printed).toContain('Amount due GBP  0.00');
  });

  it("when a draft of a taxed contract is read or printed, then it shows the tax lines its raise would fix, which add up to its total", async () => {
    const own = await createBillingFixture(api, tenant, 'GBP');
    await api.http().post(`/contracts/${own.contractId}/taxes`).set(system()).send({ name: 'VAT', rate: '20' }).expect(201);
    const { id } = await draft(own, [{ title: 'Platform fee', quantity: 1, price: '1234.5' }]);
    const read = (await api.http().get(`/invoices/${id}`).set(system()).expect(200)).body.data;
    expect(read).toMatchObject({ status: 'draft', subtotal: '1234.50', taxTotal: '246.90', total: '1481.40' });
    expect(read.data.taxes).toEqual([{ name: 'VAT', rate: '20', amount: '246.90', appliesTo: 'all', items: [read.items[0].id] }]);
    const printed = lines(await pdfOf(`/invoices/${id}/pdf`));
    expect(printed).toEqual(expect.arrayContaining(['Subtotal  1,234.50', 'VAT (20%)  246.90', 'Total GBP  1,481.40']));

    // Raised, it prints the same lines, now fixed in its data.
    const raisedNow = (await api.http().post(`/invoices/${id}/raise`).set(system()).expect(200)).body.data;
    expect(raisedNow.data.taxes).toEqual(read.data.taxes);
    expect(lines(await pdfOf(`/invoices/${id}/pdf`))).toEqual(expect.arrayContaining(['VAT (20%)  246.90', 'Total GBP  1,481.40']));
  });

  it('when nothing settles an invoice, then its PDF has no payments and credits section', async () => {
    const invoice = await raised(uk, [{ title: 'Platform fee', quantity: 1, price: 100 }]);
    expect(await pdfOf(`/invoices/${invoice.id}/pdf`)).not.toContain('Payments and credits');
  });
});

describe('locale and addresses', () => {
  it("when the customer's entity and address are deleted after a raise, then the raised invoice still prints the parties it was raised with; a draft prints today's", async () => {
    const own = await createBillingFixture(api, tenant, 'GBP', { customerAddress: { line1: '221B Baker Street', city: 'London', postalCode: 'NW1 6XE', country: 'GB' } });
    const invoice = await raised(own, [{ title: 'Consulting', quantity: 1, price: 100 }]);
    const later = await draft(own, [{ title: 'Consulting', quantity: 1, price: 100 }]);
    const { id: entityId } = await api.db('entities').where({ customer_id: own.customerId }).first('id');
    const entity = (await api.http().get(`/entities/${entityId}`).set(system()).expect(200)).body.data as { name: string; addresses: Array<{ id: string }> };
    await api.http().delete(`/entities/${entityId}/addresses/${entity.addresses[0]!.id}`).set(system()).expect(200);
    await api.http().delete(`/entities/${entityId}`).set(system()).expect(200);

    const issued = await pdfOf(`/invoices/${invoice.id}/pdf`);
    expect(issued).toContain('221B Baker Street');
    expect(issued).toContain(entity.name);
    const today = await pdfOf(`/invoices/${later.id}/pdf`);
    expect(today).not.toContain('221B Baker Street');
    expect(today).not.toContain(entity.name);
  });

  it("when a UK customer's invoice is printed, then numbers have thousands separators, dates are day first and the postcode has its own line", async () => {
    const invoice = await raised(uk, [{ title: 'Licence', quantity: '1500.5', price: 70 }]);
    expect(invoice.total).toBe('105035.00');
    const text = await pdfOf(`/invoices/${invoice.id}/pdf`);
    const printed = lines(text);
    expect(printed).toContain('Licence  1,500.5  70.00  105,035.00');
    expect(printed).toContain('Date: 01/11/2026');
    expect(printed).toContain('Period: 01/11/2026 to 30/11/2026');
    // From (left) and Bill to (right) share lines: the town, then the postcode, each alone on its side.
    expect(printed).toContain('London  London');
    expect(printed).toContain('EC1A 1BB  SW1A 2AA');
    expect(printed).toContain('United Kingdom  United Kingdom');
    expect(text).not.toContain('105035');
  });

  it("when a German customer with its own locale is invoiced, then numbers and dates are German and the postcode comes before the city", async () => {
    const invoice = await raised(german, [{ title: 'Lizenz', quantity: 1, price: '105079' }]);
    const printed = lines(await pdfOf(`/invoices/${invoice.id}/pdf`));
    expect(printed).toContain('Lizenz  1  105.079,00  105.079,00');
    expect(printed).toContain('Date: 01.11.2026');
    expect(printed.some((line) => line.endsWith('10117 Berlin'))).toBe(true);
    expect(printed.some((line) => line.endsWith('Deutschland'))).toBe(true);
    const customer = await api.http().get(`/customers/${german.customerId}`).set(system()).expect(200);
    expect(customer.body.data.locale).toBe('de-DE');
  });
});

describe('credit notes', () => {
  it('when a credit note credits units of an item, then its PDF shows the unit price of the credited line', async () => {
    const invoice = await raised(uk, [
      { title: 'Platform fee', quantity: 1, price: 100 },
      { title: 'Seats', quantity: 5, price: '12.5' },
    ]);
    const seats = invoice.items.find((item) => item.title === 'Seats')!;
    const note = await api.http().post(`/invoices/${invoice.id}/credit-notes`).set(system()).send({ reason: 'Two seats returned', items: [{ invoiceItemId: seats.id, quantity: 2 }] }).expect(201);
    const printed = lines(await pdfOf(`/credit-notes/${note.body.data.id}/pdf`));
    expect(printed).toContain('Seats  2  12.50  25.00');
    expect(printed).toContain(`Credits invoice ${invoice.number} of 01/11/2026`);
    // How to pay is for invoices, not for credit notes.
    expect(printed).not.toContain('Payment details');
  });
});

describe('invoice mail', () => {
  it('when an invoice is sent, then the text part says what the HTML part says, the due date included', async () => {
    const invoice = await raised(uk, [{ title: 'Platform fee', quantity: 1, price: '1234.5' }]);
    const sent = await api.http().post(`/invoices/${invoice.id}/send`).set(system()).expect(200);
    const mail = await mailWith(sent.body.data.data.delivery.messageId as string);
    expect(mail.text).toBeDefined();
    expect(mail.text!.trim()).toBe(htmlToText(mail.html as string));
    expect(mail.text).toContain(`due on ${invoice.dueDate}`);
    expect(mail.text).toContain(`Please find invoice ${invoice.number} attached: 1234.50 GBP for 2026-11-01 to 2026-11-30, due on ${invoice.dueDate}.`);
    expect(mail.text).toContain('Seller Ltd');
  });
});
