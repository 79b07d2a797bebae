import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection, Client, WorkflowFailedError } from '@temporalio/client';
import { fromApplicationFailure } from '../../src/domain/errors';
import { freePort } from '../../src/temporal/dev-server';
import { revenueSyncWorkflow } from '../../workflows/revenue-sync.workflow';
import { waitForWorker } from './support/worker-process';

const ROOT = path.resolve(__dirname, '../..');

/** A compiled entry point of dist/, as production runs it: plain node, no TypeScript loader. */
function runCompiled(entry: string, env: Record<string, string>, logFile: string): ChildProcess {
  const log = fs.openSync(logFile, 'a');
  // Its own task queue: the suite's worker relays the webhook outbox, not this one.
  const child = spawn(process.execPath, [path.join('dist/src/main', entry)], { cwd: ROOT, env: { ...process.env, WEBHOOK_RELAY: 'false', WORKFLOW_BUNDLE_PATH: undefined, ...env }, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  return child;
}

async function healthOf(url: string, timeoutMs: number): Promise<{ status: number; body: { data?: Record<string, string> } }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(`${url}/health`);
      const body = (await res.json()) as { data?: Record<string, string> };
      if (res.status === 200 || Date.now() > deadline) return { status: res.status, body };
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('the production build', () => {
  jest.setTimeout(300_000);
  const children: ChildProcess[] = [];
  afterAll(async () => {
    await Promise.all(
      children.filter((child) => child.exitCode === null).map((child) => new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM'))),
    );
  });

  it('when built, then the compiled worker runs workflows from the prebuilt bundle and the compiled API answers', async () => {
    const build = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: ROOT, encoding: 'utf8' });
    expect({ status: build.status, stderr: build.stderr.slice(-2000) }).toMatchObject({ status: 0 });
    expect(fs.statSync(path.join(ROOT, 'dist/workflow-bundle.js')).size).toBeGreaterThan(100_000);

    // The template render thread ships beside the compiled renderer and runs there under its budget.
    const rendering = spawnSync(
      process.execPath,
      [
        '-e',
        `const { createTemplateRenderer } = require('./dist/src/mail/templating.js');
         const renderer = createTemplateRenderer({ timeoutMs: 300, outputLimitBytes: 1048576, memoryLimitMb: 64, threads: 1 });
         (async () => {
           const normal = await renderer.render({ subject: 'Hi {{name}}', html: '<p>{{name}}</p>', text: null }, { name: 'A & B' });
           const over = await renderer.render({ subject: 's', html: '{{#each a}}{{#each @root.a}}{{/each}}{{/each}}', text: null }, { a: new Array(20000).fill(0) }).catch((error) => error.items);
           process.stdout.write(JSON.stringify({ normal, over }));
           await renderer.close();
         })();`,
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect({ status: rendering.status, stderr: rendering.stderr.slice(-2000), out: JSON.parse(rendering.stdout || 'null') }).toEqual({
      status: 0,
      stderr: '',
      out: { normal: { subject: 'Hi A & B', html: '<p>A &amp; B</p>', text: null }, over: [{ code: 1011, message: 'the html did not render within the time limit of 300 ms' }] },
    });

    const address = process.env.TEMPORAL_ADDRESS!;
    const taskQueue = `compiled-${Date.now()}`;
    const env = {
      TEMPORAL_TASK_QUEUE: taskQueue,
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      // Each process takes its own: the API METRICS_PORT, the worker WORKER_METRICS_PORT.
      METRICS_PORT: String(await freePort()),
      WORKER_METRICS_PORT: String(await freePort()),
    };
    const logFile = path.join(process.env.TEST_WORK_DIR!, `${taskQueue}.log`);
    const worker = runCompiled('worker.js', env, logFile);
    children.push(worker);
    await waitForWorker(address, taskQueue, worker, 60_000);
    children.push(runCompiled('api.js', env, logFile));

    const health = await healthOf(`http://127.0.0.1:${env.PORT}`, 60_000);
    expect(health).toEqual({ status: 200, body: expect.objectContaining({ data: { postgres: 'up', temporal: 'up', worker: 'up' } }) });
    // The compiled processes serve their metrics on their metrics ports.
    const apiMetrics = await fetch(`http://127.0.0.1:${env.METRICS_PORT}/metrics`);
    expect({ status: apiMetrics.status, figures: /^billing_figures_up 1$/m.test(await apiMetrics.text()) }).toEqual({ status: 200, figures: true });
    const workerMetrics = await fetch(`http://127.0.0.1:${env.WORKER_METRICS_PORT}/metrics`);
    expect({ status: workerMetrics.status, sdk: /^billing_worker_sdk_metrics_up 1$/m.test(await workerMetrics.text()) }).toEqual({ status: 200, sdk: true });

    // A workflow runs on the compiled worker and its activity reaches Postgres: an unknown item ends the
    // workflow at once with the typed not-found failure, which maps back to the error model.
    const connection = await Connection.connect({ address });
    try {
      const client = new Client({ connection });
      const run = client.workflow.execute(revenueSyncWorkflow, {
        taskQueue,
        workflowId: `${taskQueue}-probe`,
        args: [{ organisationId: 'org_none', invoiceItemId: 'itm_none' }],
      });
      const failure = await run.then(() => undefined, (error: unknown) => error);
      expect(failure).toBeInstanceOf(WorkflowFailedError);
      expect(fromApplicationFailure(failure)).toMatchObject({ kind: 'not_found', status: 404 });
    } finally {
      await connection.close();
    }
  });
});
