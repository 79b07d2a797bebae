import type { Services } from '../src/services';
import type { UsageActivities } from '../workflows/usage-batch.types';
import type { UsageEventStorageActivities } from '../workflows/usage-event-storage.types';
import type { UsageGroupActivities } from '../workflows/usage-ingestion.types';
import { withHeartbeat } from './adapter';

export function createUsageActivities(services: Services): UsageActivities & UsageGroupActivities & UsageEventStorageActivities {
  return {
    ingestUsageChunk: (input) => withHeartbeat(() => services.usageIngestion.ingestChunk(input)),
    completeUsageBatch: (input) => services.usageIngestion.completeBatch(input),
    failUsageBatch: (input) => services.usageIngestion.failBatch(input),
    ingestUsageGroup: (input) => withHeartbeat(() => services.usageIngestion.ingestGroup(input)),
    failUsageBatches: (input) => services.usageIngestion.failBatches(input),
    maintainUsagePartitions: () => withHeartbeat(() => services.usageEventStorage.maintainPartitions()),
    applyUsageRetention: () => withHeartbeat(() => services.usageEventStorage.applyRetention()),
  };
}
