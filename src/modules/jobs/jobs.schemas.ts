import { z } from 'zod';
import { timestamps } from '../../http/schemas';

export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const jobSchema = z.object({
  id: z.string(),
  type: z.string(),
  status: z.enum(JOB_STATUSES),
  progress: z.object({ done: z.number().int(), total: z.number().int().nullable() }),
  result: z.unknown(),
  error: z.string().nullable(),
  workflowId: z.string().nullable(),
  completedAt: z.string().nullable(),
  ...timestamps,
});
export type Job = z.output<typeof jobSchema>;
