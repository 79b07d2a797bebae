import { randomUUID } from 'node:crypto';
import { invoicesOfRun } from './support/billing-fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { recordHistory } from './support/record-history';

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

/** What the seeded organisation holds, by name. */
const seeded = { acme: '', globex: '', acmeEntity: '', meter: '', contract: '', runId: '' };

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);
const get = async (path: string, auth = system()) => (await api.http().get(path).set(auth).expect(200)).body.data;

type Reply = { conversationId: string; reply: { text: string; data: Record<string, unknown> | null; sources: string[] } };

async function ask(text: string, auth = system(), conversationId?: string): Promise<Reply> {
  const res = await api.http().post('/chatbot/messages').set(auth).send({ text, ...(conversationId ? { conversationId } : {}) });
  expect([res.status, res.body.status]).toEqual([200, 'success']);
  return res.body.data;
}

beforeAll(async () => {
  // The suite asks more than the default 30 questions a minute; the limit has its own test below.
  api = await startTestApi({ CHATBOT_MESSAGES_PER_MINUTE: '1000' });
  tenant = await createTenant(api, 'chatbot');
  other = await createTenant(api, 'chatbot-other');
  const tag = randomUUID().slice(0, 6);
  const customer = async (owner: Tenant, name: string) => (await api.http().post('/customers').set(bearer(owner.systemToken)).send({ name, currency: 'USD' }).expect(201)).body.data.id as string;
  seeded.acme = await customer(tenant, 'Acme Corporation');
  seeded.globex = await customer(tenant, 'Globex Ltd');
  await customer(tenant, 'Umbrella Inc');
  await customer(tenant, 'Umbrella Ltd');
  await customer(other, 'Hooli');
  seeded.acmeEntity = (
    await api
      .http()
      .post('/entities')
      .set(system())
      .send({ type: 'customer', name: 'Acme Corporation', customerId: seeded.acme, address: { line1: '1 Main St', city: 'Berlin', country: 'DE' } })
      .expect(201)
  ).body.data.id;
  const meter = await api.http().post('/meters').set(admin()).send({ name: 'API calls', metric: `api_calls_${tag}`, aggregation: 'sum' }).expect(201);
  seeded.meter = meter.body.data.id;
  const plan = await api
    .http()
    .post('/billing/plans')
    .set(admin())
    .send({
      name: `Standard ${tag}`,
      currency: 'USD',
      billingPeriod: 'monthly',
      items: [
        { name: 'Platform fee', pricingModel: 'flat', unitPrice: '100' },
        { name: 'API calls', pricingModel: 'per_unit', unitPrice: '0.01', meterId: seeded.meter },
      ],
    })
    .expect(201);
  const contract = await api.http().post('/contracts').set(system()).send({ customerId: seeded.acme, name: 'Acme platform', currency: 'USD', startDate: '2026-09-01', plans: [{ planId: plan.body.data.id }] }).expect(201);
  seeded.contract = contract.body.data.id;
  await api.http().post(`/contracts/${seeded.contract}/activate`).set(system()).send({}).expect(200);
  const events = [
    { CustomerEntityId: seeded.acmeEntity, metric: `api_calls_${tag}`, value: 1000, timestamp: '2026-09-15T12:00:00Z' },
    { CustomerEntityId: seeded.acmeEntity, metric: `api_calls_${tag}`, value: 200, timestamp: '2026-10-03T12:00:00Z' },
    { CustomerEntityId: seeded.acmeEntity, metric: `api_calls_${tag}`, value: 34, timestamp: '2026-10-20T12:00:00Z' },
  ];
  await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
  // The October run bills September's calls and fees in advance; raised, they are overdue by now.
  const drafts = await invoicesOfRun<{ id: string; invoiceRunId: string }>(api, tenant, seeded.contract, '2026-10-01');
  seeded.runId = drafts[0]!.invoiceRunId;
  for (const draft of drafts) await api.http().post(`/invoices/${draft.id}/raise`).set(system()).send({}).expect(200);
  // Globex: one invoice of October, paid (its contract stays a draft, so that runs leave it alone).
  const consulting = await api
    .http()
    .post('/billing/plans')
    .set(admin())
    .send({ name: `Consulting ${tag}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Consulting', pricingModel: 'flat', unitPrice: '500' }] })
    .expect(201);
  const globexContract = await api.http().post('/contracts').set(system()).send({ customerId: seeded.globex, currency: 'USD', startDate: '2026-10-01', plans: [{ planId: consulting.body.data.id }] }).expect(201);
  const globex = await api
    .http()
    .post('/invoices')
    .set(system())
    .send({
      contractPlanId: globexContract.body.data.plans[0].id,
      invoiceData: { date: '2026-10-10', fromDate: '2026-10-10', toDate: '2026-10-10' },
      invoiceItems: [{ title: 'Consulting', description: 'October', quantity: 1, price: 500, fromDate: '2026-10-10', toDate: '2026-10-10' }],
    })
    .expect(201);
  await api.http().post(`/invoices/${globex.body.data.id}/raise`).set(system()).send({}).expect(200);
  await api.http().post(`/invoices/${globex.body.data.id}/mark-paid`).set(system()).send({ paidDate: '2026-10-25' }).expect(200);
  await api.http().post('/fx-rates').set(system()).send({ fromCurrency: 'EUR', toCurrency: 'USD', rate: '1.08', effectiveDate: '2026-09-01' }).expect(201);
  await api.http().post('/fx-rates').set(system()).send({ fromCurrency: 'USD', toCurrency: 'EUR', rate: '0.92', effectiveDate: '2026-09-01' }).expect(201);
  await api.http().post('/fx-rates').set(system()).send({ fromCurrency: 'EUR', toCurrency: 'USD', rate: '1.1', effectiveDate: '2026-10-10' }).expect(201);
});
afterAll(() => api.close());

/** The status each phrasing of the invoices question names. */
const STATUS_ASKED: Record<string, string> = {
  'Paid invoices in October 2026': 'paid',
  'Which invoices were raised in October 2026?': 'raised',
  'raised invoices between 1 October 2026 and 31 October 2026': 'raised',
};

/** The day each phrasing of the FX question names; two rates are seeded (from 1 September and from 10 October), so the day decides. */
const FX_DATE_ASKED: Record<string, string> = {
  'EUR to USD exchange rate on 1 October 2026': '2026-10-01',
  'What was the EUR/USD rate on 2026-10-15?': '2026-10-15',
  'Exchange rate from EUR to USD on 2 Oct 2026': '2026-10-02',
};

/** Each question, three ways, and what the API itself says the figures are. */
const TABLE: Array<{ intent: string; phrasings: string[]; expected: (phrasing: string) => Promise<(data: Record<string, unknown>) => void> }> = [
  {
    intent: 'outstanding_amount',
    phrasings: ['How much does Acme Corporation owe?', "What is Acme's outstanding balance?", 'outstanding amount for acme corporation'],
    expected: async () => {
      const collections = await get(`/collections?customerId=${seeded.acme}`);
      return (data) => expect(data).toEqual(collections);
    },
  },
  {
    intent: 'overdue_invoices',
    phrasings: ['Which invoices are overdue?', 'Show me the overdue invoices', 'What is past due?'],
    expected: async () => {
      const page = await get('/invoices?overdue=true&limit=100');
      return (data) => {
        expect(data.total).toBe(page.total);
        expect((data.invoices as Array<{ id: string; amountDue: string }>).map((row) => [row.id, row.amountDue])).toEqual(page.items.map((invoice: { id: string; amountDue: string }) => [invoice.id, invoice.amountDue]));
      };
    },
  },
  {
    intent: 'invoices_by_status',
    phrasings: Object.keys(STATUS_ASKED),
    expected: async (phrasing) => {
      const page = await get(`/invoices?status=${STATUS_ASKED[phrasing]}&from=2026-10-01&to=2026-10-31&limit=100`);
      const items = page.items as Array<{ id: string; currency: string; total: string }>;
      // Totals per currency, in minor units (every seeded invoice is in US dollars).
      const cents = new Map<string, number>();
      for (const invoice of items) cents.set(invoice.currency, (cents.get(invoice.currency) ?? 0) + Math.round(Number(invoice.total) * 100));
      return (data) => {
        expect(items.length).toBeGreaterThan(0);
        expect(data.total).toBe(page.total);
        expect((data.invoices as Array<{ id: string }>).map((row) => row.id).sort()).toEqual(items.map((invoice) => invoice.id).sort());
        expect(data.totals).toEqual([...cents].map(([currency, amount]) => ({ currency, total: (amount / 100).toFixed(2) })));
      };
    },
  },
  {
    intent: 'revenue',
    phrasings: ['What was revenue in October 2026?', 'How much revenue did we make in October 2026?', 'revenue between 2026-10-01 and 2026-10-31'],
    expected: async () => {
      const summary = await get('/revenue/summary?from=2026-10-01&to=2026-10-31');
      return (data) => expect(data.currencies).toEqual(summary.currencies.map(({ currency, amount }: { currency: string; amount: string }) => ({ currency, amount })));
    },
  },
  {
    intent: 'top_customers',
    phrasings: ['Top 5 customers by revenue in October 2026', 'Who were our biggest customers in October 2026?', 'best customers by revenue in October 2026'],
    expected: async () => {
      const summary = await get('/revenue/summary?from=2026-10-01&to=2026-10-31&top=5');
      return (data) => expect(data.currencies).toEqual(summary.currencies);
    },
  },
  {
    intent: 'usage',
    phrasings: ['How many API calls did Acme Corporation use in October 2026?', 'API calls usage for Acme in October 2026', 'How much of the API calls meter has Acme Corporation used since 1 October 2026?'],
    expected: async () => {
      const october = await get(`/meters/${seeded.meter}/usage?customerEntityId=${seeded.acmeEntity}&from=2026-10-01T00:00:00.000Z&to=2026-11-01T00:00:00.000Z`);
      return (data) => expect(data.value).toEqual(october.value);
    },
  },
  {
    intent: 'contract_status',
    phrasings: ["What is the status of Acme Corporation's contract?", "When does Acme's contract renew?", 'What will the next invoice of the Acme platform contract be?'],
    expected: async () => {
      const contract = await get(`/contracts/${seeded.contract}`);
      const upcoming = await get(`/contracts/${seeded.contract}/upcoming-invoice`);
      return (data) => expect(data).toEqual({ contract, upcoming });
    },
  },
  {
    intent: 'last_payment',
    phrasings: ["When was Globex Ltd's last payment?", "Globex's most recent payment", 'When did Globex Ltd last pay?'],
    expected: async () => {
      const page = await get(`/payments?customerId=${seeded.globex}&limit=1`);
      return (data) => expect(data.payment).toEqual(page.items[0] ?? null);
    },
  },
  {
    intent: 'fx_rate',
    phrasings: Object.keys(FX_DATE_ASKED),
    expected: async (phrasing) => {
      const date = FX_DATE_ASKED[phrasing]!;
      const rate = await get(`/fx-rates/effective?from=EUR&to=USD&date=${date}`);
      expect(rate.effectiveDate).toBe(date === '2026-10-15' ? '2026-10-10' : '2026-09-01');
      return (data) => expect([data.rate, data.effectiveDate]).toEqual([rate.rate, rate.effectiveDate]);
    },
  },
  {
    intent: 'invoice_run',
    phrasings: ['What was the result of the last invoice run?', 'How did the latest billing run go?', 'Show me the invoice run'],
    expected: async () => {
      const run = await get(`/invoice-runs/${seeded.runId}`);
      return (data) => expect(data).toEqual(run);
    },
  },
];

describe('the built-in engine', () => {
  it.each(TABLE.flatMap((row) => row.phrasings.map((phrasing) => [row.intent, phrasing] as const)))('%s: "%s" answers with the figures the API gives', async (intent, phrasing) => {
    const row = TABLE.find((candidate) => candidate.intent === intent)!;
    const check = await row.expected(phrasing);
    const { conversationId, reply } = await ask(phrasing);
    expect(reply.sources.length).toBeGreaterThan(0);
    check(reply.data!);
    // Every source is a path of this API that the asker may read (the figures were compared above).
    for (const source of reply.sources) await get(source);
    const messages = await get(`/chatbot/conversations/${conversationId}/messages`);
    expect(messages.items.map((message: { role: string; intent: string | null }) => [message.role, message.intent])).toEqual([
      ['user', null],
      ['assistant', intent],
    ]);
  });

  it('when usage is asked by a dimension of the meter, then the answer splits it by that dimension as the meter query does', async () => {
    const metric = `tokens_${randomUUID().slice(0, 6)}`;
    const meter = (await api.http().post('/meters').set(admin()).send({ name: 'Model tokens', metric, aggregation: 'sum', groupBy: ['model', 'direction'] }).expect(201)).body.data.id as string;
    const event = (model: string, direction: string, value: number, timestamp: string) => ({ CustomerEntityId: seeded.acmeEntity, metric, value, timestamp, metadata: { model, direction } });
    const events = [
      event('alpha', 'input', 1200, '2026-10-02T08:00:00Z'),
      event('alpha', 'output', 300, '2026-10-02T08:00:01Z'),
      event('beta', 'input', 50, '2026-10-15T23:30:00Z'),
      event('alpha', 'input', 7, '2026-10-31T23:59:59Z'),
      // Outside the month asked.
      event('beta', 'input', 999, '2026-11-01T00:00:00Z'),
    ];
    await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
    const { reply } = await ask('How many model tokens did Acme Corporation use in October 2026 by model and direction?');
    expect(reply.data!.value).toBe('1557');
    expect(reply.data!.split).toEqual([
      expect.objectContaining({ groups: { model: 'alpha', direction: 'input' }, value: '1207' }),
      expect.objectContaining({ groups: { model: 'alpha', direction: 'output' }, value: '300' }),
      expect.objectContaining({ groups: { model: 'beta', direction: 'input' }, value: '50' }),
    ]);
    expect(reply.text).toContain('By model and direction: model alpha, direction input: 1207; model alpha, direction output: 300; model beta, direction input: 50.');
    const source = reply.sources.find((path) => path.startsWith(`/meters/${meter}/query?`))!;
    expect((await get(source)).rows).toEqual(reply.data!.split);
    // Only the meter's dimensions split: a word after "by" that names none of them asks for the total alone.
    const plain = await ask('How many model tokens did Acme Corporation use in October 2026 by region?');
    expect(plain.reply.data!.value).toBe('1557');
    expect(plain.reply.data!.split).toBeUndefined();
  });

  it('when a name fits several customers, then the answer lists them and guesses none', async () => {
    const { reply } = await ask('How much does Umbrella owe?');
    expect(reply.text).toContain('Umbrella Inc');
    expect(reply.text).toContain('Umbrella Ltd');
    expect((reply.data!.candidates as Array<{ name: string }>).map((candidate) => candidate.name).sort()).toEqual(['Umbrella Inc', 'Umbrella Ltd']);
    expect(reply.sources).toEqual([]);
  });

  it('when the question cannot be read, then the answer says what it can do, with examples', async () => {
    const { reply } = await ask('Tell me a joke about accountants');
    expect(reply.text).toContain('I answer questions such as');
    expect((reply.data!.examples as string[]).length).toBeGreaterThanOrEqual(10);
  });

  it('when a conversation goes on, then its turns are kept in order, and the conversations are listed', async () => {
    const first = await ask('Which invoices are overdue?');
    const second = await ask('What was revenue in October 2026?', system(), first.conversationId);
    expect(second.conversationId).toBe(first.conversationId);
    const messages = await get(`/chatbot/conversations/${first.conversationId}/messages`);
    expect(messages.items.map((message: { seq: number; role: string }) => [message.seq, message.role])).toEqual([
      [1, 'user'],
      [2, 'assistant'],
      [3, 'user'],
      [4, 'assistant'],
    ]);
    await recordHistory(api, `chat:${first.conversationId}`, 'chat-two-turns');
    const conversations = await get('/chatbot/conversations');
    expect(conversations.items).toContainEqual(expect.objectContaining({ id: first.conversationId, messages: 4, title: 'Which invoices are overdue?' }));
  });
});

describe('tenants and limits', () => {
  it('when a question names another organisation’s customer, then it answers as if the customer did not exist', async () => {
    const { reply } = await ask('How much does Hooli owe?');
    expect(reply.text).toContain('I could not tell the customer');
    expect(JSON.stringify(reply)).not.toContain('Hooli');
    // And the other organisation sees none of this one's data, nor its conversations.
    const theirs = await ask('How much does Acme Corporation owe?', bearer(other.systemToken));
    expect(JSON.stringify(theirs)).not.toContain(seeded.acme);
    expect((await get('/chatbot/conversations', bearer(other.systemToken))).items.map((item: { id: string }) => item.id)).toEqual([theirs.conversationId]);
    await api.http().get(`/chatbot/conversations/${theirs.conversationId}/messages`).set(system()).expect(404);
    await api.http().post('/chatbot/messages').set(system()).send({ conversationId: theirs.conversationId, text: 'Which invoices are overdue?' }).expect(404);
  });

  it('when an app asks more questions a minute than CHATBOT_MESSAGES_PER_MINUTE, then 429 with Retry-After, and other apps are not held back', async () => {
    const limited = await startTestApi({ CHATBOT_MESSAGES_PER_MINUTE: '2' });
    try {
      const asker = await createTenant(limited, 'chatbot-limited');
      const send = (token: string) => limited.http().post('/chatbot/messages').set(bearer(token)).send({ text: 'Which invoices are overdue?' });
      expect((await send(asker.systemToken)).status).toBe(200);
      expect((await send(asker.systemToken)).status).toBe(200);
      const third = await send(asker.systemToken);
      expect(third.status).toBe(429);
      expect(third.headers['retry-after']).toBeDefined();
      expect((await send(asker.adminToken)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('when the conversations and their messages are read by pages, then the pages split them without overlap, a conversation without an answer is not listed, and a caller without a token gets 401', async () => {
    const first = await ask('Which invoices are overdue?');
    await ask('What was revenue in October 2026?', system(), first.conversationId);
    const firstPage = await get(`/chatbot/conversations/${first.conversationId}/messages?limit=3`);
    const secondPage = await get(`/chatbot/conversations/${first.conversationId}/messages?limit=3&page=2`);
    expect([firstPage.total, firstPage.items.length, secondPage.items.length]).toEqual([4, 3, 1]);
    expect([...firstPage.items, ...secondPage.items].map((message: { seq: number }) => message.seq)).toEqual([1, 2, 3, 4]);
    const conversations = await get('/chatbot/conversations?limit=1');
    expect(conversations.items).toHaveLength(1);
    expect(conversations.total).toBeGreaterThan(1);
    const next = await get('/chatbot/conversations?limit=1&page=2');
    expect(next.items[0].id).not.toBe(conversations.items[0].id);
    // A conversation whose first question got no answer (Temporal down, a 503) holds no turn: it is not listed.
    const unanswered = 'chat_unanswered_' + randomUUID().slice(0, 8);
    await api.db('chatbot_conversations').insert({ id: unanswered, organisation_id: tenant.organisationId, started_by: 'app', title: 'Which invoices are overdue?' });
    const all = await get('/chatbot/conversations?limit=100');
    expect(all.items.map((item: { id: string }) => item.id)).not.toContain(unanswered);
    expect(all.items.map((item: { id: string }) => item.id)).toContain(first.conversationId);
    for (const request of [api.http().get('/chatbot/conversations'), api.http().post('/chatbot/messages').send({ text: 'Which invoices are overdue?' })]) {
      const res = await request;
      expect([res.status, res.body.status]).toEqual([401, 'error']);
    }
  });

  it('when a question is longer than 2,000 characters, then 400 names the field', async () => {
    const res = await api.http().post('/chatbot/messages').set(system()).send({ text: 'x'.repeat(2001) });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('body.text');
  });
});
