import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Logger } from 'pino';
import type { TemporalHandle, WorkflowServiceDeps } from '../../temporal/client';
import { searchAttributes, webhookDeliveryWorkflowId } from '../../../workflows/ids';
import type { DispatchedDelivery, WebhookService } from './webhooks.service';

/** Starts a delivery's workflow; one already started for the same delivery and generation is left running. */
async function startDelivery(temporal: TemporalHandle, delivery: DispatchedDelivery & { generation: number }): Promise<void> {
  try {
    await temporal.bounded(() =>
      temporal.workflows.start('webhookDeliveryWorkflow', {
        workflowId: webhookDeliveryWorkflowId(delivery.deliveryId, delivery.generation),
        args: [delivery],
        ...searchAttributes({ organisationId: delivery.organisationId }),
      }),
    );
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/** Redelivery through the API: the delivery pending again, under a new workflow. */
export function createWebhookDeliveryControl(deps: WorkflowServiceDeps & { webhooks: WebhookService }) {
  return {
    async redeliver(organisationId: string, id: string) {
      const delivery = await deps.webhooks.reopenDelivery(organisationId, id);
      await startDelivery(deps.temporal, { deliveryId: delivery.id, endpointId: delivery.endpoint_id, organisationId, generation: delivery.generation, since: Date.now() });
      return deps.webhooks.getDelivery(organisationId, id);
    },
  };
}

/**
 * The outbox relay, in every worker: every `intervalMs`, the oldest undispatched events become deliveries
 * and their workflows start, in the transaction that marks the events dispatched (workers share the work
 * through SKIP LOCKED). Postgres holds every event until then, so a crash or an outage of Temporal delays
 * webhooks and loses none.
 */
export function startWebhookDispatcher(deps: { webhooks: WebhookService; temporal: TemporalHandle; logger: Logger; intervalMs?: number; batch?: number }): { stop: () => Promise<void> } {
  const intervalMs = deps.intervalMs ?? 250;
  const batch = deps.batch ?? 100;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const step = async () => {
    try {
      // A full batch means more are waiting: go on at once.
      while (!stopped && (await deps.webhooks.dispatch(batch, async (deliveries) => {
        for (const delivery of deliveries) await startDelivery(deps.temporal, { ...delivery, generation: 0 });
      })) === batch);
    } catch (error) {
      deps.logger.warn({ err: error }, 'webhook dispatch failed; the events stay in the outbox and are tried again');
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = step().finally(schedule);
    }, intervalMs);
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
