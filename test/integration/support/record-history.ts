import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { TestApi } from './harness';

/**
 * With RECORD_HISTORIES=1, writes a workflow's history under test/replay/histories, where the replay
 * test checks that today's workflow code still replays it. Committed files are the record.
 */
export async function recordHistory(api: TestApi, workflowId: string, name: string): Promise<void> {
  if (process.env.RECORD_HISTORIES !== '1') return;
  const history = await api.temporal.client.workflow.getHandle(workflowId).fetchHistory();
  const file = path.resolve(__dirname, '../../replay/histories', `${name}.json`);
  fs.writeFileSync(file, `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 1)}\n`);
}
