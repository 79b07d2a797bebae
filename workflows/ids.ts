// Kept so that existing imports of this path resolve; the ids live in shared.ts.
export { usageBatchWorkflowId, usageChunkWorkflowId } from './shared';
