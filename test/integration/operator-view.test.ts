import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WorkflowExecutionDescription } from '@temporalio/client';
import { createChatbotService } from '../../src/modules/chatbot';
import { BillingKindKey, OrganisationIdKey } from '../../workflows/search-attributes';
import { waitFor } from '../support/wait';
import { createBillingFixture, invoiceBody } from './support/billing-fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { recordHistory } from './support/record-history';

/**
 * What operators see in the Temporal UI: webhook deliveries and chatbot conversations run on task queues
 * of their own, with their id prefix and `BillingKind`, so that the filter the operations guide gives
 * leaves them out; and a conversation ends after CHATBOT_IDLE_SECONDS without a question, to be picked up
 * again from Postgres by the next one. The suite's shared worker serves every queue.
 */

/** The filter docs/operations.md gives for the operators' view. */
const OPERATOR_VIEW = 'BillingKind IS NULL OR BillingKind NOT IN ("webhook-delivery", "chatbot")';
const IDLE_SECONDS = 3;

let api: TestApi;
let tenant: Tenant;
let receiver: http.Server;
let received = 0;

beforeAll(async () => {
  api = await startTestApi({ CHATBOT_IDLE_SECONDS: String(IDLE_SECONDS), CHATBOT_MESSAGES_PER_MINUTE: '1000' });
  tenant = await createTenant(api, 'operator-view');
  receiver = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received += 1;
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  await api.close();
});

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);
const describeWorkflow = (workflowId: string) => api.temporal.client.workflow.getHandle(workflowId).describe();

async function ask(text: string, conversationId?: string): Promise<string> {
  const res = await api.http().post('/chatbot/messages').set(system()).send({ text, ...(conversationId ? { conversationId } : {}) });
  expect([res.status, res.body.status]).toEqual([200, 'success']);
  return res.body.data.conversationId as string;
}

/** The organisation's workflow ids that a visibility query lists. */
async function listed(query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const workflow of api.temporal.client.workflow.list({ query: `OrganisationId = "${tenant.organisationId}" AND (${query})` })) ids.push(workflow.workflowId);
  return ids.sort();
}

const placement = (description: WorkflowExecutionDescription) => ({
  taskQueue: description.taskQueue,
  kind: description.typedSearchAttributes.get(BillingKindKey),
  organisationId: description.typedSearchAttributes.get(OrganisationIdKey),
});

describe('the operators’ view of Temporal', () => {
  it('when a webhook is delivered, a question answered and an invoice created, then the delivery and the conversation run on their own queues, with their prefix and kind, and the operators’ filter lists the invoice without them', async () => {
    const port = (receiver.address() as AddressInfo).port;
    const endpoint = await api.http().post('/webhooks/endpoints').set(admin()).send({ url: `http://127.0.0.1:${port}/hook`, eventTypes: ['invoice.created'] }).expect(201);
    const fixture = await createBillingFixture(api, tenant);
    const invoice = (await api.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId)).expect(201)).body.data;
    await waitFor(() => (received > 0 ? true : undefined), 30_000);
    const [delivery] = (await api.http().get('/webhooks/deliveries').set(admin()).query({ endpointId: endpoint.body.data.id }).expect(200)).body.data.items;
    const conversationId = await ask('How many customers do we have?');

    const main = api.config.TEMPORAL_TASK_QUEUE;
    const deliveryWorkflow = `webhook-delivery:${delivery.id}:0`;
    const chatWorkflow = `chat:${conversationId}`;
    const invoiceWorkflow = `invoice:${invoice.id}`;
    const organisationId = tenant.organisationId;
    expect(placement(await describeWorkflow(deliveryWorkflow))).toEqual({ taskQueue: `${main}-webhooks`, kind: 'webhook-delivery', organisationId });
    expect(placement(await describeWorkflow(chatWorkflow))).toEqual({ taskQueue: `${main}-chatbot`, kind: 'chatbot', organisationId });
    expect(placement(await describeWorkflow(invoiceWorkflow))).toEqual({ taskQueue: main, kind: 'invoice', organisationId });

    // Visibility catches up within moments; then each kind is found by its filter, and the operators' view
    // holds the invoice (and the rest of the billing work) but neither a delivery nor a conversation.
    const view = await waitFor(async () => {
      const ids = await listed(OPERATOR_VIEW);
      const others = await listed('BillingKind IN ("webhook-delivery", "chatbot")');
      return ids.includes(invoiceWorkflow) && others.length === 2 ? ids : undefined;
    }, 30_000);
    expect(view.filter((id) => id.startsWith('webhook-delivery:') || id.startsWith('chat:'))).toEqual([]);
    expect(view).toContain(`contract:${fixture.contractId}`);
    expect(await listed('BillingKind = "webhook-delivery"')).toEqual([deliveryWorkflow]);
    expect(await listed('BillingKind = "chatbot"')).toEqual([chatWorkflow]);
    // The same by queue: the main queue's workflows are the operators' view.
    expect(await listed(`TaskQueue = "${main}"`)).toEqual(view);
    // Every workflow started carries its kind: none is left for the `IS NULL` part, which is for workflows
    // started before the attribute existed.
    expect(await listed('BillingKind IS NULL')).toEqual([]);
  });

  it('when a conversation gets no question for CHATBOT_IDLE_SECONDS, then its workflow completes, and the next question continues it in a new run, its history whole', async () => {
    const conversationId = await ask('How many customers do we have?');
    await ask('Which invoices are overdue?', conversationId);
    const first = await describeWorkflow(`chat:${conversationId}`);
    const closed = await waitFor(async () => {
      const description = await describeWorkflow(`chat:${conversationId}`);
      return description.status.name === 'COMPLETED' ? description : undefined;
    }, (IDLE_SECONDS + 20) * 1000);
    expect(closed.runId).toBe(first.runId);
    expect(await api.temporal.client.workflow.getHandle(`chat:${conversationId}`, first.runId).result()).toBe(2);
    // It closed for idleness, not at once: no sooner than the idle time after it was last answered.
    expect(closed.closeTime!.getTime() - first.startTime.getTime()).toBeGreaterThanOrEqual(IDLE_SECONDS * 1000);
    await recordHistory(api, `chat:${conversationId}`, 'chat-two-turns-idle-close');

    await ask('How many customers do we have now?', conversationId);
    const again = await describeWorkflow(`chat:${conversationId}`);
    expect(again.runId).not.toBe(first.runId);
    expect(again.status.name).toBe('RUNNING');
    const messages = (await api.http().get(`/chatbot/conversations/${conversationId}/messages`).set(system()).expect(200)).body.data.items as Array<{ seq: number; role: string; text: string }>;
    expect(messages.map((message) => [message.seq, message.role])).toEqual([
      [1, 'user'],
      [2, 'assistant'],
      [3, 'user'],
      [4, 'assistant'],
      [5, 'user'],
      [6, 'assistant'],
    ]);
    expect(messages.filter((message) => message.role === 'user').map((message) => message.text)).toEqual([
      'How many customers do we have?',
      'Which invoices are overdue?',
      'How many customers do we have now?',
    ]);
    const conversation = (await api.http().get('/chatbot/conversations').set(system()).expect(200)).body.data.items.find((entry: { id: string }) => entry.id === conversationId);
    expect(conversation.messages).toBe(6);
  });

  it('when a question sent with an Idempotency-Key is sent again after its conversation’s workflow completed, then it gets the same answer and is not asked twice', async () => {
    // The chatbot service as the API runs it, called twice with one key, as a retry after a 503 would be
    // (the API's stored answers, which would answer a retry after a 200 first, are not in the way here).
    const chatbot = createChatbotService({ db: api.db, temporal: api.temporal, engine: 'builtin', idleSeconds: IDLE_SECONDS });
    const auth = { organisationId: tenant.organisationId, subjectId: tenant.appId, role: 'SystemUser' as const, tokenId: 'retry', tokenVersion: 1 };
    const { conversationId } = await chatbot.send(auth, { text: 'How many customers do we have?' });
    const first = await chatbot.send(auth, { conversationId, text: 'Which invoices are overdue?' }, 'retried-key');
    await waitFor(async () => ((await describeWorkflow(`chat:${conversationId}`)).status.name === 'COMPLETED' ? true : undefined), (IDLE_SECONDS + 20) * 1000);
    const closed = await describeWorkflow(`chat:${conversationId}`);

    const retried = await chatbot.send(auth, { conversationId, text: 'Which invoices are overdue?' }, 'retried-key');
    expect(retried).toEqual(first);
    // Temporal answered from the closed run: no new run, and the question is stored once.
    expect((await describeWorkflow(`chat:${conversationId}`)).runId).toBe(closed.runId);
    const messages = (await api.http().get(`/chatbot/conversations/${conversationId}/messages`).set(system()).expect(200)).body.data.items as Array<{ seq: number }>;
    expect(messages.map((message) => message.seq)).toEqual([1, 2, 3, 4]);
  });

  it('when a conversation still runs on the main queue, as one started before the queues were split, then the next question is answered there and it still ends when idle', async () => {
    const conversationId = await ask('How many customers do we have?');
    await waitFor(async () => ((await describeWorkflow(`chat:${conversationId}`)).status.name === 'COMPLETED' ? true : undefined), (IDLE_SECONDS + 20) * 1000);
    // As the API started every conversation before: on the main queue.
    const main = api.config.TEMPORAL_TASK_QUEUE;
    const old = await api.temporal.client.workflow.start('chatConversationWorkflow', {
      taskQueue: main,
      workflowId: `chat:${conversationId}`,
      args: [{ organisationId: tenant.organisationId, conversationId, turns: 1, idleSeconds: IDLE_SECONDS }],
      typedSearchAttributes: [{ key: OrganisationIdKey, value: tenant.organisationId }],
    });
    await ask('Which invoices are overdue?', conversationId);
    const description = await describeWorkflow(`chat:${conversationId}`);
    expect([description.runId, description.taskQueue]).toEqual([old.firstExecutionRunId, main]);
    expect(await old.result()).toBe(2);
    const messages = (await api.http().get(`/chatbot/conversations/${conversationId}/messages`).set(system()).expect(200)).body.data.items as Array<{ seq: number }>;
    expect(messages.map((message) => message.seq)).toEqual([1, 2, 3, 4]);
  });
});
