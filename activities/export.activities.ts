import { Context } from '@temporalio/activity';
import type { ExportInput, ExportProgress } from '../workflows/export.types';
import type { Services } from '../src/services';


export function createExportActivities(services: Services) {
  return {
    /** The heartbeat carries the progress, so a retry resumes after the last page it recorded. */
    exportObjects: (input: ExportInput) => {
      const context = Context.current();
      return services.objectExports.exportObjects(input, {
        resumeFrom: context.info.heartbeatDetails as ExportProgress | undefined,
        onProgress: (details) => context.heartbeat(details),
      });
    },
    finishJob: (input: { organisationId: string; jobId: string; result?: unknown; error?: string }) => services.jobs.finish(input),
  };
}

export type ExportActivities = ReturnType<typeof createExportActivities>;
