import { ApplicationFailure, continueAsNew } from '@temporalio/workflow';
import type { MeterBackfillActivities, MeterBackfillInput } from './meter-backfill.types';
import { activitiesOf, failureReason } from './shared';

const fill = activitiesOf<MeterBackfillActivities>('backfill');
const bookkeeping = activitiesOf<MeterBackfillActivities>('bookkeeping');

/** Slices per run: a long fill continues as new so that its history stays short. */
const SLICES_PER_RUN = 200;

/**
 * One per meter definition (meter and generation): fills the meter's rollups from the events stored
 * before, a slice at a time. Progress is kept on the meter in Postgres, in each slice's transaction, so a
 * run that continues as new, or a workflow started again, resumes where the last slice ended.
 */
export async function meterBackfillWorkflow(input: MeterBackfillInput): Promise<{ status: 'completed' | 'failed' | 'superseded' }> {
  for (let slice = 0; slice < SLICES_PER_RUN; slice += 1) {
    let outcome;
    try {
      outcome = await fill.fillMeterBackfillSlice(input);
    } catch (error) {
      const message = failureReason(error);
      await bookkeeping.failMeterBackfill({ ...input, error: message });
      throw ApplicationFailure.nonRetryable(`the backfill of meter ${input.meterId} failed: ${message}`, 'BackfillFailed');
    }
    if (outcome.done) return { status: outcome.status === 'running' ? 'completed' : outcome.status };
  }
  return continueAsNew<typeof meterBackfillWorkflow>(input);
}
