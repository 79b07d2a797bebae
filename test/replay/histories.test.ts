import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { workflowCode } from '../support/workflow-code';

const HISTORIES = path.join(__dirname, 'histories');

jest.setTimeout(120_000);

describe('recorded workflow histories', () => {
  const files = fs.readdirSync(HISTORIES).filter((file) => file.endsWith('.json'));

  it('when histories are recorded, then there are some to replay', () => {
    expect(files.length).toBeGreaterThanOrEqual(11);
  });

  it('when each history is replayed against today\'s workflow code, then none hits a determinism error', async () => {
    const histories = files.map((file) => ({ workflowId: file.replace(/\.json$/, ''), history: JSON.parse(fs.readFileSync(path.join(HISTORIES, file), 'utf8')) as unknown }));
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories(workflowCode(), histories)) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
  });
});
