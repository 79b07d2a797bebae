import { Context } from '@temporalio/activity';
import type { ExportActivities, ExportProgress } from '../workflows/export.types';
import type { Services } from '../src/services';

export function createExportActivities(services: Services): ExportActivities {
  return {
    /** The heartbeat carries the progress, so a retry resumes after the last page it recorded. */
    exportObjects: (input) => {
      const context = Context.current();
      return services.objectExports.exportObjects(input, {
        resumeFrom: context.info.heartbeatDetails as ExportProgress | undefined,
        onProgress: (details) => context.heartbeat(details),
      });
    },
    finishJob: (input) => services.jobs.finish(input),
  };
}
