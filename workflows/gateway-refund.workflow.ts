import { sleep } from '@temporalio/workflow';
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
  let status = await gateway.refundThroughGateway(input);
  for (let readBack = 0; status === 'pending' && readBack < READ_BACKS; readBack += 1) {
    await sleep(READ_BACK_EVERY);
    status = await gateway.refundThroughGateway(input);
  }
  return { status };
}
