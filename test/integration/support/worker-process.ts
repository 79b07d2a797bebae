import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * The worker entry point (`src/main/worker.ts`, from the sources), as a child process whose output goes to
 * a log file. Only the suite's shared worker relays the webhook outbox (global setup turns it on): a
 * worker on a queue or a Temporal of its own, which a test may kill, must not take deliveries.
 */
export function spawnWorker(env: Record<string, string | undefined>, logFile: string): ChildProcess {
  const log = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main/worker.ts'], {
    cwd: ROOT,
    env: { ...process.env, WEBHOOK_RELAY: 'false', ...env },
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  return child;
}

/** Resolves once a worker polls the queue; workflow bundling takes a while on two cores. */
export async function waitForWorker(address: string, taskQueue: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const deadline = Date.now() + timeoutMs;
    const startedAt = Date.now() / 1000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`worker exited with code ${child.exitCode}`);
      const { pollers } = await connection.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      if (pollers.some((poller) => Number(poller.lastAccessTime?.seconds ?? 0) >= startedAt - 1)) return;
      if (Date.now() > deadline) throw new Error(`no worker polled ${taskQueue} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    await connection.close();
  }
}

/**
 * Workers on a test's own task queue, on the suite's Temporal server, each logging to
 * TEST_WORK_DIR/<queue>.log: `start` resolves once the new one polls; `all` lists every one started, for
 * the test to kill.
 */
export function queueWorkers(taskQueue: string): { all: ChildProcess[]; start: (env?: Record<string, string>) => Promise<ChildProcess> } {
  const all: ChildProcess[] = [];
  return {
    all,
    start: async (env = {}) => {
      const worker = spawnWorker({ ...env, TEMPORAL_TASK_QUEUE: taskQueue }, path.join(process.env.TEST_WORK_DIR!, `${taskQueue}.log`));
      all.push(worker);
      await waitForWorker(process.env.TEMPORAL_ADDRESS!, taskQueue, worker, 180_000);
      return worker;
    },
  };
}
