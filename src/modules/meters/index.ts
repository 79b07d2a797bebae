import type { Knex } from 'knex';
import { createMeterRepository } from './meters.repository';

export { rollupMeterOf, specOf } from './meters.repository';
export { dimensionValueText, filtersSchema, MAX_DIMENSIONS, metadataKey } from './meter-dimensions';
export { createMeterService } from './meters.service';
export type { MeterService, MeterUses } from './meters.service';
export { createMeterBackfillService } from './meter-backfill.service';
export type { MeterBackfillService } from './meter-backfill.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type MeterAccess = Pick<ReturnType<typeof createMeterRepository>, 'findById' | 'findMany' | 'rollupMeters'>;
export const metersIn = (db: Knex): MeterAccess => createMeterRepository(db);
