import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody, type BillingFixture } from './support/billing-fixtures';
import { waitFor } from '../support/wait';
import { mailWith, pdfText } from './support/read-back';
import { REFUSED_DOMAIN } from './support/smtp-capture';
import { utcDaysFromToday, utcToday } from '../support/calendar';

let api: TestApi;
let tenant: Tenant;
let fixture: BillingFixture;
let admin: ReturnType<typeof bearer>;
let system: ReturnType<typeof bearer>;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'emails');
  fixture = await createBillingFixture(api, tenant);
  admin = bearer(tenant.adminToken);
  system = bearer(tenant.systemToken);
});
afterAll(() => api.close());

const FORBIDDEN = { status: 'error', message: 'Forbidden', errors: [] };

/** The e-mail once its workflow has settled it: sent or failed. */
async function settled(id: string): Promise<Record<string, unknown>> {
  return waitFor(async () => {
    const res = await api.http().get(`/emails/${id}`).set(system).expect(200);
    return res.body.data.status === 'queued' ? undefined : res.body.data;
  }, 60_000);
}

async function template(body: object, auth = admin) {
  return api.http().post('/email-templates').set(auth).send(body);
}

async function invoice(date?: string): Promise<string> {
  const body = date ? { ...invoiceBody(fixture.contractPlanId), invoiceData: { date } } : invoiceBody(fixture.contractPlanId);
  return (await api.http().post('/invoices').set(system).send(body).expect(201)).body.data.id;
}

describe('e-mail templates', () => {
  it('when an Admin manages templates, then SystemUser reads them and gets the 403 envelope on every change', async () => {
    const created = await template({ name: 'Welcome', kind: 'custom', subject: 'Welcome {{name}}', html: '<p>Hello {{name}}</p>' });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ name: 'Welcome', kind: 'custom', text: null });
    const id = created.body.data.id as string;

    expect((await api.http().get(`/email-templates/${id}`).set(system).expect(200)).body.data.subject).toBe('Welcome {{name}}');
    const listed = await api.http().get('/email-templates').query({ kind: 'custom' }).set(system).expect(200);
    expect(listed.body.data.items.map((item: { id: string }) => item.id)).toContain(id);

    for (const [method, route, body] of [
      ['post', '/email-templates', { name: 'Mine', kind: 'custom', subject: 's', html: 'h' }],
      ['put', `/email-templates/${id}`, { subject: 'Changed' }],
      ['delete', `/email-templates/${id}`, undefined],
    ] as const) {
      const res = await api.http()[method](route).set(system).send(body);
      expect([method, route, res.status, res.body]).toEqual([method, route, 403, FORBIDDEN]);
    }

    const updated = await api.http().put(`/email-templates/${id}`).set(admin).send({ text: 'Hello {{name}}' }).expect(200);
    expect(updated.body.data).toMatchObject({ subject: 'Welcome {{name}}', text: 'Hello {{name}}' });
    await api.http().delete(`/email-templates/${id}`).set(admin).expect(200);
    await api.http().get(`/email-templates/${id}`).set(system).expect(404);
  });

  it('when a template does not parse, or a second invoice template is added, then 400 names the part and 409 refuses the second', async () => {
    const broken = await template({ name: 'Broken', kind: 'custom', subject: 'Hi', html: '<p>{{#if paid}}unclosed</p>' });
    expect(broken.status).toBe(400);
    expect(broken.body.errors[0]).toMatchObject({ path: 'body.html', message: expect.stringContaining('not a valid template') });
    const helper = await template({ name: 'Helper', kind: 'custom', subject: '{{shout name}}', html: '<p></p>' });
    expect(helper.status).toBe(400);
    expect(helper.body.errors[0].path).toBe('body.subject');

    const other = await createTenant(api, 'emails-kinds');
    const first = await template({ name: 'Invoice mail', kind: 'invoice', subject: 'Your invoice', html: '<p>Attached.</p>' }, bearer(other.adminToken));
    expect(first.status).toBe(201);
    const second = await template({ name: 'Invoice mail 2', kind: 'invoice', subject: 'Your invoice', html: '<p>Attached.</p>' }, bearer(other.adminToken));
    expect(second.status).toBe(409);
    const sameName = await template({ name: 'Invoice mail', kind: 'custom', subject: 's', html: 'h' }, bearer(other.adminToken));
    expect(sameName.status).toBe(409);
  });
});

describe('POST /emails', () => {
  it("when a template is sent with variables, then they are rendered (escaped in HTML), it is sent once and its status shows its Message-ID", async () => {
    const created = await template({
      name: 'Code',
      kind: 'custom',
      subject: 'Code for {{customer.name}}',
      html: '<p>Dear {{customer.name}}, your code is <b>{{code}}</b>.</p>',
      text: 'Dear {{customer.name}}, your code is {{code}}.',
    });
    const res = await api
      .http()
      .post('/emails')
      .set(system)
      .send({ templateId: created.body.data.id, to: ['ann@example.com', 'bob@example.com', 'ann@example.com'], variables: { customer: { name: '<script>Ann & Bob</script>' }, code: 42 } });
    expect(res.status).toBe(201);
    const email = res.body.data;
    expect(email).toMatchObject({ status: 'queued', to: ['ann@example.com', 'bob@example.com'], subject: 'Code for <script>Ann & Bob</script>', templateId: created.body.data.id, messageId: `<email-${email.id}@billing>` });

    expect(await settled(email.id)).toMatchObject({ status: 'sent', attempts: 1, error: null, sentAt: expect.any(String) });
    const mail = await mailWith(`email-${email.id}@billing`);
    expect(mail.messageId).toBe(`<email-${email.id}@billing>`);
    expect(mail.subject).toBe('Code for <script>Ann & Bob</script>');
    expect(mail.html).toContain('<p>Dear &lt;script&gt;Ann &amp; Bob&lt;/script&gt;, your code is <b>42</b>.</p>');
    expect(mail.text).toContain('Dear <script>Ann & Bob</script>, your code is 42.');
    const listed = await api.http().get('/emails').query({ status: 'sent' }).set(system).expect(200);
    expect(listed.body.data.items.map((item: { id: string }) => item.id)).toContain(email.id);
  });

  it("when an invoice is named, then its PDF is attached", async () => {
    const invoiceId = await invoice();
    const raised = await api.http().post(`/invoices/${invoiceId}/raise`).set(system).expect(200);
    const number = raised.body.data.number as string;
    const res = await api
      .http()
      .post('/emails')
      .set(system)
      .send({ subject: 'Invoice {{number}}', html: '<p>Invoice {{number}} is attached.</p>', to: ['ap@example.com'], variables: { number }, invoiceId })
      .expect(201);

    expect(await settled(res.body.data.id)).toMatchObject({ status: 'sent', invoiceId });
    const mail = await mailWith(`email-${res.body.data.id}@billing`);
    expect(mail.attachments.map((file) => [file.filename, file.contentType])).toEqual([[`${number}.pdf`, 'application/pdf']]);
    expect(pdfText(mail.attachments[0]!.content)).toContain(`Invoice ${number}`);
  });

  it('when the mail server refuses the recipient for good, then the e-mail fails after one attempt with its answer', async () => {
    const res = await api.http().post('/emails').set(system).send({ subject: 'Hello', html: '<p>Hello</p>', to: [`nobody@${REFUSED_DOMAIN}`] }).expect(201);
    expect(await settled(res.body.data.id)).toMatchObject({ status: 'failed', attempts: 1, sentAt: null, error: expect.stringContaining('Mailbox unavailable') });
  });

  it('when the body is not one message, then 400 names what is wrong, an unknown template or invoice is 404, and nothing is stored', async () => {
    const before = await api.db('emails').where({ organisation_id: tenant.organisationId }).count<{ count: string }[]>({ count: '*' });
    const other = await createTenant(api, 'emails-other');
    const otherInvoice = (await api.http().post('/invoices').set(bearer(other.systemToken)).send(invoiceBody((await createBillingFixture(api, other)).contractPlanId)).expect(201)).body.data.id;
    const cases: Array<[object, string]> = [
      [{ templateId: 'etp_x', subject: 'Hi', to: ['a@example.com'] }, 'subject'],
      [{ html: '<p>no subject</p>', to: ['a@example.com'] }, 'subject'],
      [{ subject: 'Hi', html: '<p>Hi</p>', to: [] }, 'to'],
      [{ subject: 'Hi', html: '<p>Hi</p>', to: ['not an address'] }, 'to'],
      [{ subject: '{{blank}}', html: '<p>Hi</p>', to: ['a@example.com'] }, 'variables'],
      [{ subject: 'Hi', html: '<p>{{x}}</p>', to: ['a@example.com'], variables: { x: 'nul \u0000 inside' } }, 'variables'],
    ];
    for (const [body, field] of cases) {
      const res = await api.http().post('/emails').set(system).send(body);
      expect([field, res.status]).toEqual([field, 400]);
      expect(JSON.stringify(res.body.errors)).toContain(field);
    }
    // An id of the body that the organisation does not have is not found, as everywhere.
    for (const [body, what] of [
      [{ templateId: 'etp_unknown', to: ['a@example.com'] }, 'E-mail template'],
      [{ subject: 'Hi', html: '<p>Hi</p>', to: ['a@example.com'], invoiceId: otherInvoice }, 'Invoice'],
    ] as const) {
      const res = await api.http().post('/emails').set(system).send(body);
      expect([res.status, res.body.message]).toEqual([404, `${what} not found`]);
    }
    expect(await api.db('emails').where({ organisation_id: tenant.organisationId }).count<{ count: string }[]>({ count: '*' })).toEqual(before);
  });
});

describe("invoice mail uses the organisation's templates", () => {
  it("when an invoice is sent, then the organisation's invoice template renders it, with the invoice's variables", async () => {
    const own = await createTenant(api, 'emails-invoice-template');
    const ownFixture = await createBillingFixture(api, own);
    await template({ name: 'Ours', kind: 'invoice', subject: 'Bill {{invoice.number}}: {{invoice.total}} {{invoice.currency}}', html: '<p>To {{customer.name}} from {{seller.name}}</p>' }, bearer(own.adminToken)).then((res) => expect(res.status).toBe(201));
    // Dated today, the invoice is not overdue once sent: its mail is the only one.
    const id = (await api.http().post('/invoices').set(bearer(own.systemToken)).send({ ...invoiceBody(ownFixture.contractPlanId), invoiceData: { date: utcToday() } }).expect(201)).body.data.id;
    const number = (await api.http().post(`/invoices/${id}/raise`).set(bearer(own.systemToken)).expect(200)).body.data.number;
    await api.http().post(`/invoices/${id}/send`).set(bearer(own.systemToken)).expect(200);

    const mail = await mailWith(`invoice-${id}-`);
    expect(mail.subject).toBe(`Bill ${number}: 100.00 USD`);
    expect(mail.html).toContain('<p>To Customer GmbH from Seller Ltd</p>');
    expect(mail.attachments.map((file) => file.contentType)).toEqual(['application/pdf']);
    // The PDF that goes out is the sent invoice, as it reads afterwards.
    expect(pdfText(mail.attachments[0]!.content)).toMatch(/Status: sent/);
  });

  it('when an overdue invoice is reminded, then the reminder template renders it and the first reminder emits invoice.overdue once', async () => {
    const own = await createTenant(api, 'emails-reminder-template');
    const ownFixture = await createBillingFixture(api, own);
    await template(
      { name: 'Nudge', kind: 'reminder', subject: 'Overdue {{invoice.number}} by {{daysOverdue}} days', html: '<p>{{invoice.total}} {{invoice.currency}} was due on {{invoice.dueDate}}.</p>', text: 'Day {{daysAfterDue}} reminder' },
      bearer(own.adminToken),
    ).then((res) => expect(res.status).toBe(201));
    const body = { ...invoiceBody(ownFixture.contractPlanId), invoiceData: { date: utcDaysFromToday(-50) } };
    const id = (await api.http().post('/invoices').set(bearer(own.systemToken)).send(body).expect(201)).body.data.id;
    const raised = (await api.http().post(`/invoices/${id}/raise`).set(bearer(own.systemToken)).expect(200)).body.data;

    // Raised 20 days past its due date (30-day terms): the 14-day reminder is the one that goes out.
    const mail = await mailWith(`invoice-${id}-reminder-14@billing`);
    expect(mail.subject).toBe(`Overdue ${raised.number} by 20 days`);
    expect(mail.html).toContain(`<p>100.00 USD was due on ${raised.dueDate}.</p>`);
    expect(mail.text).toContain('Day 14 reminder');
    const events = await waitFor(async () => {
      const rows = await api.db('webhook_events').where({ organisation_id: own.organisationId, type: 'invoice.overdue' });
      return rows.length > 0 ? rows : undefined;
    }, 30_000);
    expect(events.map((event) => [event.payload.type, event.payload.data.id, event.payload.data.status])).toEqual([['invoice.overdue', id, 'raised']]);
  });
});
