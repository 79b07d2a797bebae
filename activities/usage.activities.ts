import type { Services } from '../src/services';
import type { UsageActivities } from '../workflows/usage-batch.types';
import { withHeartbeat } from './adapter';

export function createUsageActivities(services: Services): UsageActivities {
  return {
    ingestUsageChunk: (input) => withHeartbeat(() => services.usageIngestion.ingestChunk(input)),
    completeUsageBatch: (input) => services.usageIngestion.completeBatch(input),
    failUsageBatch: (input) => services.usageIngestion.failBatch(input),
  };
}
