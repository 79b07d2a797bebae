import type { Services } from '../src/services';
import type { MeterBackfillActivities } from '../workflows/meter-backfill.types';
import { withHeartbeat } from './adapter';

export function createMeterActivities(services: Services): MeterBackfillActivities {
  return {
    fillMeterBackfillSlice: (input) => withHeartbeat(() => services.meterBackfill.fillSlice(input)),
    failMeterBackfill: (input) => services.meterBackfill.fail(input),
  };
}
