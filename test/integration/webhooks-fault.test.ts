import { markDispatched } from '../../src/events/outbox';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { createWebhookRepository } from '../../src/modules/webhooks/webhooks.repository';
import { deliveryIdOf } from '../../src/modules/webhooks/webhooks.service';
import { webhookDeliveryWorkflow } from '../../workflows/webhook-delivery.workflow';
import { bearer, createTenant, type Tenant, type TestApi } from './support/harness';
import { waitFor } from '../support/wait';
import { startBreakableStack, type BreakableStack } from './support/breakable-stack';

jest.setTimeout(240_000);

let stack: BreakableStack;
let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  stack = await startBreakableStack('webhooks-fault');
  api = stack.api;
  tenant = await createTenant(api, 'webhooks-fault');
});
afterAll(() => stack?.close());

it('when the worker is killed while a delivery is in flight, then the event is still delivered, with the same webhook-id', async () => {
  // The receiver holds its first request open until the worker is dead, then answers 200 to everything.
  const requests: Array<{ headers: Record<string, string>; body: string }> = [];
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({ headers: request.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8') });
      if (requests.length === 1) void held.then(() => response.writeHead(200).end('late'));
      else response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const created = await api.http().post('/webhooks/endpoints').set(bearer(tenant.adminToken)).send({ url, eventTypes: ['*'] }).expect(201);
    // Every worker on this database relays the outbox, the suite's own included: the event is written as
    // dispatched, and its delivery's workflow started here, on this stack's Temporal and worker.
    const endpointId = created.body.data.id as string;
    const eventId = await api.db.transaction(async (trx) => {
      const repository = createWebhookRepository(trx);
      const id = await repository.emitTriggered(tenant.organisationId, 'webhook.test', { kill: true }, null);
      await markDispatched(trx, [id]);
      await repository.createDeliveries([{ id: deliveryIdOf(endpointId, id), organisationId: tenant.organisationId, endpointId, eventId: id }]);
      return id;
    });
    const deliveryId = deliveryIdOf(endpointId, eventId);
    await api.temporal.client.workflow.start(webhookDeliveryWorkflow, {
      workflowId: `webhook-delivery:${deliveryId}:0`,
      taskQueue: api.config.TEMPORAL_TASK_QUEUE,
      args: [{ deliveryId, endpointId, organisationId: tenant.organisationId, generation: 0, since: Date.now() }],
    });
    const triggered = { body: { data: { eventId } } };

    await waitFor(async () => (requests.length >= 1 ? true : undefined), 30_000);
    await stack.killWorker();
    release();
    await stack.startWorker();

    // The attempt the kill cut short is tried again once its activity times out, and now delivers.
    const delivery = await waitFor(async () => {
      const row = await api.db('webhook_deliveries').where({ id: deliveryId }).first();
      return row?.status === 'delivered' ? row : undefined;
    }, 180_000);
    expect(delivery.event_id).toBe(triggered.body.data.eventId);
    expect(requests.length).toBeGreaterThanOrEqual(2);
    for (const request of requests) {
      expect(request.headers['webhook-id']).toBe(triggered.body.data.eventId);
      expect(new Webhook(created.body.data.secret).verify(request.body, request.headers)).toMatchObject({ type: 'webhook.test' });
    }
  } finally {
    release();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
