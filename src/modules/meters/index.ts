import type { Knex } from 'knex';
import { createMeterRepository } from './meters.repository';

export { specOf } from './meters.repository';
export { MAX_DIMENSIONS, metadataKey } from './meter-dimensions';
export { createMeterService } from './meters.service';
export type { MeterService } from './meters.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type MeterAccess = Pick<ReturnType<typeof createMeterRepository>, 'findById' | 'findMany'>;
export const metersIn = (db: Knex): MeterAccess => createMeterRepository(db);
