import { log, sleep } from '@temporalio/workflow';
import type { GatewayRefundActivities, RefundRequest, RefundStatus } from './gateway-refund.types';
import { activitiesOf } from './shared';

const gateway = activitiesOf<GatewayRefundActivities>('gatewayCall');

/** A refund the gateway has not settled is read back every hour, for three days at most. */
const READ_BACK_EVERY = '1 hour';
const READ_BACKS = 72;

/**
 * One per credit note that refunds an invoice a gateway collected (`gateway-refund:{creditNoteId}`): the
 * refund is asked of the gateway once, then read back until it settles, for when no webhook tells it.
 */
export async function gatewayRefundWorkflow(input: RefundRequest): Promise<{ status: RefundStatus }> {
  // A step that fails past its own retries (the gateway away) is tried again at the next read-back.
  const step = () =>
    gateway.refundThroughGateway(input).catch((error: unknown) => {
      log.warn('a refund through the gateway failed after its retries; it is tried again later', { creditNoteId: input.creditNoteId, error: String(error) });
      return 'pending' as const;
    });
  let status: RefundStatus = await step();
  for (let readBack = 0; status === 'pending' && readBack < READ_BACKS; readBack += 1) {
    await sleep(READ_BACK_EVERY);
    status = await step();
  }
  return { status };
}
