import { ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { TemporalHandle } from '../../temporal/client';
import { paymentReconciliationScheduleId, paymentReconciliationWorkflowId, searchAttributes } from '../../../workflows/ids';
import type { PaymentReconciliationInput } from '../../../workflows/payment-reconciliation.types';

const RECONCILIATION_WORKFLOW = 'paymentReconciliationWorkflow';

/** How many days back the daily reconciliation reads the gateway: a payment is compared on three runs. */
export const DAILY_RECONCILIATION_DAYS = 3;

/**
 * The organisation's daily reconciliation: a Temporal Schedule (`payment-reconciliation:{organisationId}`,
 * every day at 05:00 UTC) that starts `paymentReconciliationWorkflow`. Made when the organisation saves its
 * gateway credentials; one that exists already is left as it is.
 */
export async function ensureReconciliationSchedule(temporal: TemporalHandle, organisationId: string): Promise<void> {
  const input: PaymentReconciliationInput = { organisationId, days: DAILY_RECONCILIATION_DAYS };
  try {
    await temporal.bounded(() =>
      temporal.client.schedule.create({
        scheduleId: paymentReconciliationScheduleId(organisationId),
        spec: { calendars: [{ hour: 5, minute: 0 }] },
        action: {
          type: 'startWorkflow',
          workflowType: RECONCILIATION_WORKFLOW,
          taskQueue: temporal.taskQueue,
          workflowId: paymentReconciliationWorkflowId(organisationId),
          args: [input],
          ...searchAttributes({ organisationId }, RECONCILIATION_WORKFLOW),
        },
        policies: { overlap: ScheduleOverlapPolicy.SKIP },
        ...searchAttributes({ organisationId }),
      }),
    );
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
}
