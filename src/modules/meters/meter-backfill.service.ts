import type { Knex } from 'knex';
import { lockRollups, nextEventAt, rebuildRollups, utcDayOf } from '../usage';
import type { MeterBackfillInput, MeterBackfillSlice } from '../../../workflows/meter-backfill.types';
import { createMeterRepository, rollupMeterOf } from './meters.repository';

/**
 * The steps of a meter's backfill. Each slice is one transaction under the organisation's exclusive rollup
 * lock: the next UTC day holding events of the meter's metric is folded anew from every raw event of that
 * day (replacing whatever ingestion added there meanwhile), and the meter's progress (events read, the
 * cursor past that day, the status) is recorded with it. A chunk being ingested holds the shared lock, so it
 * either committed before the slice (and the slice reads its events) or adds after it (to what the slice
 * wrote): no event is counted twice or lost. A slice retried finds the progress of the last that committed.
 */
export function createMeterBackfillService(db: Knex) {
  return {
    async fillSlice(input: MeterBackfillInput): Promise<MeterBackfillSlice> {
      return db.transaction(async (trx) => {
        await lockRollups(trx, input.organisationId, 'exclusive');
        const meters = createMeterRepository(trx);
        const meter = await meters.findById(input.organisationId, input.meterId);
        if (!meter || meter.backfill_generation !== input.generation) return { done: true, status: 'superseded', eventsRead: 0 };
        const read = Number(meter.backfill_events_read);
        if (meter.backfill_status === 'completed' || meter.backfill_status === 'failed') return { done: true, status: meter.backfill_status, eventsRead: read };
        const next = await nextEventAt(trx, input.organisationId, meter.metric, meter.backfill_cursor);
        if (next === null) {
          await meters.recordBackfill(meter.id, input.generation, { read: 0, cursor: meter.backfill_cursor, status: 'completed' });
          return { done: true, status: 'completed', eventsRead: read };
        }
        const day = utcDayOf(next);
        const slice = await rebuildRollups(trx, input.organisationId, rollupMeterOf(meter), [{ customerEntityId: null, from: day.from, to: day.to }]);
        const more = (await nextEventAt(trx, input.organisationId, meter.metric, day.to)) !== null;
        const status = more ? 'running' : 'completed';
        await meters.recordBackfill(meter.id, input.generation, { read: slice, cursor: day.to, status });
        return { done: !more, status, eventsRead: read + slice };
      });
    },

    /** The fill gave up: `failed`, unless a later definition or a finished fill stands. */
    async fail(input: MeterBackfillInput & { error: string }): Promise<void> {
      await db('meters')
        .where({ organisation_id: input.organisationId, id: input.meterId, backfill_generation: input.generation })
        .whereIn('backfill_status', ['pending', 'running'])
        .update({ backfill_status: 'failed' });
    },
  };
}

export type MeterBackfillService = ReturnType<typeof createMeterBackfillService>;
