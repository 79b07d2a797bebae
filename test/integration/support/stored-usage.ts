import type { Knex } from 'knex';
import { newId } from '../../../src/db/ids';
import { metersIn } from '../../../src/modules/meters';
import { bucketOf, lockRollups, rebuildRollups } from '../../../src/modules/usage';

/**
 * A usage event written straight to its table, quicker than a batch through the workflow, with what
 * ingestion keeps alongside it: the rollups of the organisation's meters of its metric, the event's
 * bucket rebuilt from raw events under the exclusive rollup lock.
 */
export async function storeUsageEvent(db: Knex, event: { organisationId: string; customerEntityId: string; metric: string; value: string; timestamp: string }): Promise<void> {
  await db.transaction(async (trx) => {
    await lockRollups(trx, event.organisationId, 'exclusive');
    await trx('usage_events').insert({ id: newId('evt'), organisation_id: event.organisationId, customer_entity_id: event.customerEntityId, metric: event.metric, value: event.value, timestamp: event.timestamp });
    const from = bucketOf(new Date(event.timestamp));
    const range = { customerEntityId: event.customerEntityId, from, to: new Date(from.getTime() + 15 * 60_000) };
    for (const meter of await metersIn(trx).rollupMeters(event.organisationId)) {
      if (meter.metric === event.metric) await rebuildRollups(trx, event.organisationId, meter, [range]);
    }
  });
}
