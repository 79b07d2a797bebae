/** Workflow ids are business keys: one batch, one workflow; a retry finds the same one. */
export const usageBatchWorkflowId = (batchId: string) => `usage-batch:${batchId}`;
export const usageChunkWorkflowId = (batchId: string, chunkIndex: number) => `usage-batch:${batchId}:chunk:${chunkIndex}`;
