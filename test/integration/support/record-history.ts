import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { findTemporalBinary } from '../../../src/temporal/binaries';
import type { TestApi } from './harness';

/**
 * With RECORD_HISTORIES=1, writes a workflow's history (as `temporal workflow show --output json` prints
 * it) under test/replay/histories, where the replay test checks that today's workflow code still replays
 * it. The committed files are the record.
 */
export async function recordHistory(api: TestApi, workflowId: string, name: string): Promise<void> {
  if (process.env.RECORD_HISTORIES !== '1') return;
  const binary = findTemporalBinary('temporal', process.env.TEMPORAL_CLI_PATH, process.env.PATH ?? '');
  if (!binary) throw new Error('recording histories needs the temporal CLI');
  const json = execFileSync(binary, ['workflow', 'show', '--address', api.config.TEMPORAL_ADDRESS!, '--workflow-id', workflowId, '--output', 'json'], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  fs.writeFileSync(path.resolve(__dirname, '../../replay/histories', `${name}.json`), json);
}
