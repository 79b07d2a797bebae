import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody } from './support/billing-fixtures';
import { queueWorkers } from './support/worker-process';

// A queue of its own, so that killing this worker leaves the suite's shared worker alone.
const taskQueue = `billing-invoice-fault-${randomUUID()}`;
let api: TestApi;
let tenant: Tenant;
const workers = queueWorkers(taskQueue);
const startWorker = () => workers.start();

/** Until a transaction waits for the lock of a number counter: the step is inside its transaction, held there. */
async function untilWaitingOnCounter(): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const waiting = await api.db.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%invoice_number_counters%'");
    if (waiting.rows[0].n > 0) return;
    if (Date.now() > deadline) throw new Error('no step reached the number counter');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  api = await startTestApi({ TEMPORAL_TASK_QUEUE: taskQueue });
  tenant = await createTenant(api, 'invoice-fault');
});
afterAll(async () => {
  for (const worker of workers.all) if (worker.exitCode === null) worker.kill('SIGKILL');
  await api.close();
});

it('when the worker is killed in the middle of a raise, then the invoice ends raised once, with one number and one set of revenue records', async () => {
  const worker = await startWorker();
  const fixture = await createBillingFixture(api, tenant);
  const create = () => api.http().post('/invoices').set(bearer(tenant.systemToken)).send(invoiceBody(fixture.contractPlanId));
  // A first raise creates the organisation's number counter.
  const first = await create();
  await api.http().post(`/invoices/${first.body.data.id}/raise`).set(bearer(tenant.systemToken)).expect(200);
  const invoice = (await create()).body.data;

  // Hold the counter: the raise takes the invoice's lock, then waits here, in the middle of its transaction.
  const blocker = await api.db.transaction();
  await blocker('invoice_number_counters').where({ organisation_id: tenant.organisationId }).forUpdate().first();
  const raiseOnce = () => api.http().post(`/invoices/${invoice.id}/raise`).set(bearer(tenant.systemToken)).set('Idempotency-Key', `raise-${invoice.id}`).send({});
  const raise = raiseOnce().then((res) => res);
  await untilWaitingOnCounter();
  worker.kill('SIGKILL');
  await blocker.commit();

  await startWorker();
  // The Update waits TEMPORAL_UPDATE_TIMEOUT_MS for the new worker, else answers 503; a retry with the same
  // key picks up the same Update's result.
  let res = await raise;
  for (let attempt = 0; res.status === 503 && attempt < 5; attempt += 1) res = await raiseOnce();
  expect(res.status).toBe(200);
  expect(res.body.data).toMatchObject({ status: 'raised', number: 'INV-000002' });
  const transitions = await api.db('invoice_transitions').where({ invoice_id: invoice.id }).select('step');
  expect(transitions).toEqual([{ step: 'raise' }]);
  const counter = await api.db('invoice_number_counters').where({ organisation_id: tenant.organisationId }).first('last_number');
  expect(counter.last_number).toBe(2);
  const revenue = await api.db('revenue_records').where({ invoice_id: invoice.id });
  expect(revenue).toHaveLength(1);
});

it('when the worker is killed in the middle of a credit note\'s issue, then the note ends issued once, with one number, and nothing else counts', async () => {
  // One worker on the queue, so that the one killed below is the one running the issue.
  for (const worker of workers.all) if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
  const worker = await startWorker();
  const fixture = await createBillingFixture(api, tenant);
  const auth = bearer(tenant.systemToken);
  const created = await api.http().post('/invoices').set(auth).send(invoiceBody(fixture.contractPlanId)).expect(201);
  await api.http().post(`/invoices/${created.body.data.id}/raise`).set(auth).send({}).expect(200);
  const invoiceId = created.body.data.id as string;
  const credit = (key: string) => api.http().post(`/invoices/${invoiceId}/credit-notes`).set(auth).set('Idempotency-Key', key).send({ reason: 'Fault', amount: '10' });
  // A first credit note creates the organisation's credit note counter.
  expect((await credit(`first-${invoiceId}`)).body.data.number).toBe('CN-000001');

  // Hold the counter: the issue takes the invoice's and the note's locks, then waits here, inside its transaction.
  const blocker = await api.db.transaction();
  await blocker('invoice_number_counters').where({ organisation_id: tenant.organisationId, series: 'credit_note' }).forUpdate().first();
  const issuing = credit(`second-${invoiceId}`).then((res) => res);
  await untilWaitingOnCounter();
  worker.kill('SIGKILL');
  await blocker.commit();
  await startWorker();

  // A 503 (the Update outlived its wait) leaves nothing behind; the same request again gets the note issued.
  let res = await issuing;
  for (let attempt = 0; res.status === 503 && attempt < 5; attempt += 1) res = await credit(`second-${invoiceId}`);
  expect(res.status).toBe(201);
  expect(res.body.data).toMatchObject({ status: 'issued', number: 'CN-000002', total: '10.00' });
  const notes = await api.db('credit_notes').where({ invoice_id: invoiceId }).orderBy('number').select('number', 'status');
  expect(notes).toEqual([
    { number: 'CN-000001', status: 'issued' },
    { number: 'CN-000002', status: 'issued' },
  ]);
  const counter = await api.db('invoice_number_counters').where({ organisation_id: tenant.organisationId, series: 'credit_note' }).first('last_number');
  expect(counter.last_number).toBe(2);
});

it('when the worker is killed in the middle of a chatbot answer, then the question is answered once, in its place, and a retry with its key gets that answer', async () => {
  const worker = await startWorker();
  const auth = bearer(tenant.systemToken);
  const first = await api.http().post('/chatbot/messages').set(auth).send({ text: 'Which invoices are overdue?' }).expect(200);
  const conversationId = first.body.data.conversationId as string;
  const ask = () => api.http().post('/chatbot/messages').set(auth).set('Idempotency-Key', `chat-${conversationId}`).send({ conversationId, text: 'What was revenue in October 2026?' });

  // Hold the conversation's row: the answer is read and written but for this lock, inside its transaction.
  const blocker = await api.db.transaction();
  await blocker('chatbot_conversations').where({ id: conversationId }).forUpdate().first();
  const asking = ask().then((res) => res);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const waiting = await api.db.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%chatbot_conversations%'");
    if (waiting.rows[0].n > 0) break;
    if (Date.now() > deadline) throw new Error('no answer reached the conversation lock');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  worker.kill('SIGKILL');
  await blocker.commit();
  await startWorker();

  // A 503 (the Update outlived its wait) leaves the question to its Update; the same key waits for its answer.
  let res = await asking;
  for (let attempt = 0; res.status === 503 && attempt < 5; attempt += 1) res = await ask();
  expect(res.status).toBe(200);
  expect(res.body.data.reply.sources).toEqual(['/revenue/summary?from=2026-10-01&to=2026-10-31']);
  const messages = await api.db('chatbot_messages').where({ conversation_id: conversationId }).orderBy('seq').select('seq', 'role');
  expect(messages).toEqual([
    { seq: 1, role: 'user' },
    { seq: 2, role: 'assistant' },
    { seq: 3, role: 'user' },
    { seq: 4, role: 'assistant' },
  ]);
  const conversation = await api.db('chatbot_conversations').where({ id: conversationId }).first('messages');
  expect(conversation.messages).toBe(4);
});
