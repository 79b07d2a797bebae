import type { Services } from '../src/services';
import type { UsageBatchSummary, UsageChunkInput } from '../workflows/usage-batch.types';
import { withHeartbeat } from './adapter';

export function createUsageActivities(services: Services) {
  return {
    ingestUsageChunk: (input: UsageChunkInput) => withHeartbeat(() => services.usageIngestion.ingestChunk(input)),
    completeUsageBatch: (input: { batchId: string; summary: UsageBatchSummary }) => services.usageIngestion.completeBatch(input),
    failUsageBatch: (input: { batchId: string; error: string }) => services.usageIngestion.failBatch(input),
  };
}

export type UsageActivities = ReturnType<typeof createUsageActivities>;
