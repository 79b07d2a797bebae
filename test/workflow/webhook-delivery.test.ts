import { ApplicationFailure } from '@temporalio/common';
import { webhookDeliveryWorkflow } from '../../workflows/webhook-delivery.workflow';
import { WEBHOOK_ATTEMPT_OFFSETS_MS, type WebhookActivities } from '../../workflows/webhook-delivery.types';
import { TASK_QUEUE, timeSkippingEnvironment, useWorkflowEnvironment } from './support/environment';

/** Scripted answers of the attempt activity, per delivery: an outcome, or an error the activity ends with. */
const script = new Map<string, Array<'delivered' | 'stopped' | 'retry' | 'fails'>>();
const attempts = new Map<string, number[]>();
const gaveUp: string[] = [];

const environment = useWorkflowEnvironment(timeSkippingEnvironment, {
  async attemptWebhookDelivery(input: { deliveryId: string; attempt: number }) {
    attempts.set(input.deliveryId, [...(attempts.get(input.deliveryId) ?? []), input.attempt]);
    const next = script.get(input.deliveryId)?.shift() ?? 'retry';
    if (next === 'fails') throw ApplicationFailure.nonRetryable('Postgres stayed away', 'TestFailure');
    return next;
  },
  async giveUpWebhookDelivery(input: { deliveryId: string }) {
    gaveUp.push(input.deliveryId);
  },
} satisfies WebhookActivities);

async function deliver(deliveryId: string) {
  return environment().client.workflow.execute(webhookDeliveryWorkflow, {
    workflowId: `webhook-delivery:${deliveryId}:0`,
    taskQueue: TASK_QUEUE,
    args: [{ deliveryId, endpointId: 'whe_1', organisationId: 'org_1', generation: 0, since: Date.now() }],
  });
}

it('when an attempt activity gives up, then the schedule goes on and a later attempt delivers', async () => {
  script.set('whd_a', ['retry', 'fails', 'delivered']);
  expect(await deliver('whd_a')).toBe('delivered');
  expect(attempts.get('whd_a')).toEqual([1, 2, 3]);
  expect(gaveUp).not.toContain('whd_a');
});

it('when every attempt fails, then all ten are made and the delivery is given up', async () => {
  expect(await deliver('whd_b')).toBe('failed');
  expect(attempts.get('whd_b')).toEqual(WEBHOOK_ATTEMPT_OFFSETS_MS.map((_, index) => index + 1));
  expect(gaveUp).toContain('whd_b');
});

it('when an attempt says stop (a 410, an endpoint gone), then no further attempt is made', async () => {
  script.set('whd_c', ['retry', 'stopped']);
  expect(await deliver('whd_c')).toBe('stopped');
  expect(attempts.get('whd_c')).toEqual([1, 2]);
});
