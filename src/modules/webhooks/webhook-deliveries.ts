import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { EventSubscriber } from '../../events/relay';
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
 * Webhooks as a subscriber of the domain events (src/events/relay.ts): every event becomes one delivery per
 * endpoint subscribed to its type, each delivered by a workflow of its own.
 */
export function webhookSubscriber(deps: { webhooks: WebhookService; temporal: TemporalHandle }): EventSubscriber {
  return {
    name: 'webhooks',
    handle: (trx, events) =>
      deps.webhooks.deliver(trx, events, async (deliveries) => {
        for (const delivery of deliveries) await startDelivery(deps.temporal, { ...delivery, generation: 0 });
      }),
  };
}
