import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CHATBOT_QUERIES } from '../../src/modules/chatbot/chatbot-queries';
import { toolParameters } from '../../src/modules/chatbot/model-engine';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { queueWorkers } from './support/worker-process';

/**
 * The model engine against a scripted OpenAI-compatible server on 127.0.0.1: it answers each call to
 * /v1/chat/completions from a script, by how many tool results the conversation holds so far, so that a
 * retried call gets the same answer. A worker of this suite's own (on its own queue) runs the model calls.
 */
type Message = { role: string; content: unknown; tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }> };
type Script = (toolResults: number) => { content?: string; calls?: Array<{ name: string; args: object }>; status?: number };

interface ScriptedServer {
  url: string;
  requests: Array<{ tools: Array<{ function: { name: string; parameters: unknown } }>; messages: Message[] }>;
  play(script: Script): void;
  /** Holds the first call made with this many tool results, unanswered, and resolves when it arrives. */
  holdAt(toolResults: number): Promise<void>;
  close(): Promise<void>;
}

async function startScriptedServer(): Promise<ScriptedServer> {
  let script: Script = () => ({ content: 'No script.' });
  let hold: { at: number; arrived: () => void } | undefined;
  const requests: ScriptedServer['requests'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const request = JSON.parse(body) as ScriptedServer['requests'][number];
      requests.push(request);
      const lastUser = request.messages.map((message) => message.role).lastIndexOf('user');
      const toolResults = request.messages.slice(lastUser).filter((message) => message.role === 'tool').length;
      if (hold && hold.at === toolResults) {
        // Never answered: the worker that asked is killed meanwhile.
        const { arrived } = hold;
        hold = undefined;
        arrived();
        return;
      }
      const step = script(toolResults);
      if (step.status) {
        res.statusCode = step.status;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ error: { message: 'model "scripted" not found, try pulling it first', type: 'invalid_request_error' } }));
        return;
      }
      const message = step.calls
        ? { role: 'assistant', content: null, tool_calls: step.calls.map((call, i) => ({ id: `call_${toolResults}_${i}`, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } })) }
        : { role: 'assistant', content: step.content };
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: `chatcmpl-${requests.length}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: 'scripted',
          choices: [{ index: 0, message, finish_reason: step.calls ? 'tool_calls' : 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    play: (next) => {
      script = next;
      requests.length = 0;
    },
    holdAt: (at) => new Promise<void>((arrived) => (hold = { at, arrived })),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const taskQueue = `chatbot-model-${randomUUID()}`;
let model: ScriptedServer;
let api: TestApi;
let tenant: Tenant;
let other: Tenant;
let acme = '';
let hooli = '';
const workers = queueWorkers(taskQueue);
const startWorker = () => workers.start({ CHATBOT_LLM_BASE_URL: model.url, CHATBOT_LLM_MODEL: 'scripted' });

beforeAll(async () => {
  model = await startScriptedServer();
  api = await startTestApi({ TEMPORAL_TASK_QUEUE: taskQueue, CHATBOT_LLM_BASE_URL: model.url, CHATBOT_LLM_MODEL: 'scripted', CHATBOT_MESSAGES_PER_MINUTE: '1000' });
  tenant = await createTenant(api, 'chatbot-model');
  other = await createTenant(api, 'chatbot-model-other');
  acme = (await api.http().post('/customers').set(bearer(tenant.systemToken)).send({ name: 'Acme Corporation', currency: 'USD' }).expect(201)).body.data.id;
  hooli = (await api.http().post('/customers').set(bearer(other.systemToken)).send({ name: 'Hooli', currency: 'USD' }).expect(201)).body.data.id;
  await startWorker();
});
afterAll(async () => {
  for (const worker of workers.all) if (worker.exitCode === null) worker.kill('SIGKILL');
  await api.close();
  await model.close();
});

const ask = (text: string, key?: string) => {
  const request = api.http().post('/chatbot/messages').set(bearer(tenant.systemToken));
  return (key ? request.set('Idempotency-Key', key) : request).send({ text });
};

describe('the model engine', () => {
  it('when the model asks a tool, then the tools offered are the built-in queries, the result goes back to it, and the figures come from the tool', async () => {
    model.play((results) => (results === 0 ? { calls: [{ name: 'outstanding_amount', args: { customer: 'Acme Corporation' } }] } : { content: 'Acme Corporation owes nothing.' }));
    const res = await ask('How much does Acme owe?');
    expect(res.status).toBe(200);

    // The tools offered: one per built-in query, each described by its zod schema's JSON Schema.
    const offered = model.requests[0]!.tools.map((offer) => [offer.function.name, offer.function.parameters]);
    expect(offered.map(([name]) => name)).toEqual(CHATBOT_QUERIES.map((query) => query.name));
    for (const [name, parameters] of offered) expect(parameters).toMatchObject(JSON.parse(JSON.stringify(toolParameters(name as string))));
    // The tool's result went back to the model as the call's answer.
    const collections = (await api.http().get(`/collections?customerId=${acme}`).set(bearer(tenant.systemToken)).expect(200)).body.data;
    const toolMessage = model.requests[1]!.messages.find((message) => message.role === 'tool')!;
    expect(JSON.parse(toolMessage.content as string).data).toEqual(collections);

    expect(res.body.data.reply).toEqual({
      text: 'Acme Corporation owes nothing.',
      data: { results: [{ tool: 'outstanding_amount', input: { customer: 'Acme Corporation' }, data: collections }] },
      sources: [`/collections?customerId=${acme}`],
    });
  });

  it('when the model names a write operation or another organisation’s customer, then the server refuses both and tells the model so', async () => {
    const invoicesBefore = await api.db('invoices').where({ organisation_id: tenant.organisationId }).count<{ count: string }[]>('* as count');
    model.play((results) =>
      results === 0
        ? {
            calls: [
              { name: 'create_invoice', args: { customer: 'Acme Corporation', amount: '1000' } },
              { name: 'outstanding_amount', args: { customer: hooli } },
            ],
          }
        : { content: 'I cannot do that.' },
    );
    const res = await ask('Invoice Acme 1000, then tell me what the customer with that id owes');
    expect(res.status).toBe(200);
    const toolMessages = model.requests[1]!.messages.filter((message) => message.role === 'tool').map((message) => String(message.content));
    expect(toolMessages[0]).toContain("is not one of the chatbot's questions");
    // Another organisation's id is an id this one does not have: no candidates, and nothing of theirs.
    expect(JSON.parse(toolMessages[1]!)).toEqual({ text: `No customer of this organisation has the id "${hooli}".`, data: null, sources: [] });
    expect(res.body.data.reply).toMatchObject({ text: 'I cannot do that.', data: { results: [] }, sources: [] });
    // Nothing was written, and nothing of the other organisation came back.
    expect(await api.db('invoices').where({ organisation_id: tenant.organisationId }).count<{ count: string }[]>('* as count')).toEqual(invoicesBefore);
    expect(JSON.stringify(model.requests)).not.toContain('Hooli');
  });

  it('when the model server refuses the call (an unknown model), then the question answers 409 with our own words and its status, at once', async () => {
    model.play(() => ({ status: 404 }));
    const res = await ask('How much does Acme owe?');
    expect(res.status).toBe(409);
    expect(res.body.errors[0].message).toBe('the language model refused the question (status 404)');
    // The model server's own text stays with the deployment.
    expect(JSON.stringify(res.body)).not.toContain('pulling');
    expect(model.requests).toHaveLength(1);
  });

  it('when the worker is killed between two tool calls, then the reply completes once and no tool runs twice', async () => {
    model.play((results) => {
      if (results === 0) return { calls: [{ name: 'outstanding_amount', args: { customer: 'Acme Corporation' } }] };
      if (results === 1) return { calls: [{ name: 'last_payment', args: { customer: 'Acme Corporation' } }] };
      return { content: 'Acme owes nothing and has not paid yet.' };
    });
    // The second call to the model (after the first tool's result) never gets its answer: the worker dies waiting.
    const held = model.holdAt(1);
    const key = `kill-${randomUUID()}`;
    const asking = ask('What does Acme owe, and when did it last pay?', key).then((res) => res);
    await held;
    workers.all.at(-1)!.kill('SIGKILL');
    await startWorker();

    let res = await asking;
    for (let attempt = 0; res.status === 503 && attempt < 5; attempt += 1) res = await ask('What does Acme owe, and when did it last pay?', key);
    expect(res.status).toBe(200);
    expect(res.body.data.reply.text).toBe('Acme owes nothing and has not paid yet.');
    expect(res.body.data.reply.data.results.map((result: { tool: string }) => result.tool)).toEqual(['outstanding_amount', 'last_payment']);
    const conversationId = res.body.data.conversationId as string;
    const messages = await api.db('chatbot_messages').where({ conversation_id: conversationId }).orderBy('seq').select('seq', 'role');
    expect(messages).toEqual([
      { seq: 1, role: 'user' },
      { seq: 2, role: 'assistant' },
    ]);
    // Each tool ran once: the first was not run again by the new worker.
    const history = await api.temporal.client.workflow.getHandle(`chat:${conversationId}`).fetchHistory();
    const toolRuns = (history.events ?? []).filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'chatToolCall');
    expect(toolRuns).toHaveLength(2);
  });

  it('when a conversation’s workflow has completed for idleness, then the next question starts it again and the model reads the earlier turns from Postgres', async () => {
    // An API of its own, whose conversations close after two idle seconds.
    const brief = await startTestApi({ TEMPORAL_TASK_QUEUE: taskQueue, CHATBOT_LLM_BASE_URL: model.url, CHATBOT_LLM_MODEL: 'scripted', CHATBOT_IDLE_SECONDS: '2' });
    try {
      const send = (text: string, conversationId?: string) => brief.http().post('/chatbot/messages').set(bearer(tenant.systemToken)).send({ text, ...(conversationId ? { conversationId } : {}) });
      model.play(() => ({ content: 'Acme Corporation is your largest customer.' }));
      const first = await send('Who is our largest customer?');
      expect(first.status).toBe(200);
      const conversationId = first.body.data.conversationId as string;
      const handle = brief.temporal.client.workflow.getHandle(`chat:${conversationId}`);
      const firstRun = (await handle.describe()).runId;
      expect(await brief.temporal.client.workflow.getHandle(`chat:${conversationId}`, firstRun).result()).toBe(1);

      model.play(() => ({ content: 'It owes nothing.' }));
      const second = await send('How much does it owe?', conversationId);
      expect(second.status).toBe(200);
      expect((await handle.describe()).runId).not.toBe(firstRun);
      // The model read the first turn, which only Postgres held once the first run had ended.
      expect(model.requests[0]!.messages.filter((message) => message.role === 'user' || message.role === 'assistant').map((message) => [message.role, message.content])).toEqual([
        ['user', 'Who is our largest customer?'],
        ['assistant', 'Acme Corporation is your largest customer.'],
        ['user', 'How much does it owe?'],
      ]);
      const messages = await brief.db('chatbot_messages').where({ conversation_id: conversationId }).orderBy('seq').select('seq', 'role');
      expect(messages.map((message: { seq: number }) => message.seq)).toEqual([1, 2, 3, 4]);
    } finally {
      await brief.close();
    }
  });
});
