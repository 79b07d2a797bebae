import { spawnSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');

/** The project's own ESLint configuration, run the way `npm run lint` runs it, on a source read from stdin. */
async function lintWorkflowSource(source: string): Promise<string[]> {
  const run = spawnSync(
    path.join(root, 'node_modules/.bin/eslint'),
    ['--stdin', '--stdin-filename', 'workflows/probe.workflow.ts', '--format', 'json'],
    { cwd: root, input: source, encoding: 'utf8' },
  );
  const [result] = JSON.parse(run.stdout) as Array<{ messages: Array<{ message: string }> }>;
  return result!.messages.map((message) => message.message);
}

describe('the workflow import rule', () => {
  jest.setTimeout(30_000);

  it('when a workflow imports a Node built-in, knex, or a value from src outside src/domain, then lint fails', async () => {
    const messages = await lintWorkflowSource(
      [
        "import fs from 'node:fs';",
        "import knex from 'knex';",
        "import { loadConfig } from '../src/config';",
        "import { createUsageActivities } from '../activities/usage.activities';",
        'export const used = [fs, knex, loadConfig, createUsageActivities];',
      ].join('\n'),
    );
    expect(messages).toEqual([
      expect.stringContaining("'node:fs' import is restricted"),
      expect.stringContaining("'knex' import is restricted"),
      expect.stringContaining('Workflows may import values only from src/domain'),
      expect.stringContaining('never directly'),
    ]);
  });

  it('when a workflow imports even the types of an activities file, then lint fails: activities are declared in workflows/', async () => {
    const messages = await lintWorkflowSource(["import type { Services } from '../activities/index';", 'export const used: Services | undefined = undefined;'].join('\n'));
    expect(messages).toEqual([expect.stringContaining('never directly')]);
  });

  it('when a workflow imports pure domain code and types only, then lint passes', async () => {
    const messages = await lintWorkflowSource(
      [
        "import { parseUsageEvent } from '../src/domain/usage-event';",
        "import type { Config } from '../src/config';",
        "import type { UsageActivities } from './usage-batch.types';",
        'export const used: [typeof parseUsageEvent, Config | undefined, UsageActivities | undefined] = [parseUsageEvent, undefined, undefined];',
      ].join('\n'),
    );
    expect(messages).toEqual([]);
  });
});
