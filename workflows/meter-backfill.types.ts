/** The contract of `meterBackfillWorkflow`: its input, result and activities. */

/** One meter's definition (its generation) to fill rollups for. */
export interface MeterBackfillInput {
  organisationId: string;
  meterId: string;
  generation: number;
}

/**
 * A slice's outcome: `done` when nothing is left to fill (completed) or the fill is no longer wanted (the
 * meter was redefined or deleted: superseded).
 */
export interface MeterBackfillSlice {
  done: boolean;
  status: 'running' | 'completed' | 'failed' | 'superseded';
  eventsRead: number;
}

export interface MeterBackfillActivities {
  /** One slice (a UTC day of events) folded into the meter's rollups, progress recorded in the same transaction. */
  fillMeterBackfillSlice(input: MeterBackfillInput): Promise<MeterBackfillSlice>;
  /** The fill gave up: the meter reads raw events until it is redefined. */
  failMeterBackfill(input: MeterBackfillInput & { error: string }): Promise<void>;
}
