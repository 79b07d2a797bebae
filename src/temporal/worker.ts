import fs from 'node:fs';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { createActivities } from '../../activities';
import { type Config, SetupError } from '../config';
import { createIdempotencyService } from '../modules/idempotency';
import { createServices, serviceDepsFrom } from '../services';
import { resolveContractPlan, createContractService } from '../modules/contracts';
import { createChatbotAnswerService } from '../modules/chatbot';
import { createInvoiceRunControlService } from '../modules/invoice-runs';
import { createInvoiceRunScheduleService } from '../modules/invoice-run-schedules';
import { createInvoiceService } from '../modules/invoices';
import { invoiceSettlements } from '../modules/settlements';
import { ensureUsageEventStorageSchedule } from '../modules/usage';
import { startEventRelay } from '../events/relay';
import { metricsSubscriber } from '../observability/event-metrics';
import { webhookSubscriber } from '../modules/webhooks';
import { alertSubscriber } from '../modules/alerts';
import { entitlementSubscriber } from '../modules/entitlements';
import { progressiveBillingSubscriber } from '../modules/invoice-runs';
import { collectionSubscriber, refundSubscriber } from '../modules/payments';
import { connectionOptions, connectTemporal } from './client';
import { ensureSearchAttributes } from './search-attributes';
import { distinctQueues, taskQueuesOf } from './task-queues';

/** How long past its grace a stopping worker waits before it stops whatever still runs. */
const WORKER_FORCE_AFTER_GRACE_SECONDS = 15;

export const WORKFLOWS_PATH = require.resolve('../../workflows');

/** Written by `npm run build` (scripts/build.ts) as dist/workflow-bundle.js, beside the compiled code. */
export const WORKFLOW_BUNDLE_PATH = path.resolve(__dirname, '../../workflow-bundle.js');

/**
 * Compiled (dist/), the worker runs the workflow bundle made at build time; from the TypeScript sources
 * (tsx, jest), it bundles workflows/ at start, once for all its queues, so that edits take effect without a
 * build, unless `prebuilt` names a bundle made beforehand (several workers started from the same sources
 * then bundle once between them).
 */
async function workflowCode(prebuilt: string | undefined): Promise<Pick<WorkerOptions, 'workflowBundle'>> {
  if (prebuilt !== undefined) {
    if (!fs.existsSync(prebuilt)) throw new SetupError(`WORKFLOW_BUNDLE_PATH names ${prebuilt}, which does not exist`);
    return { workflowBundle: { codePath: prebuilt } };
  }
  if (path.extname(__filename) !== '.js') return { workflowBundle: await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH }) };
  if (!fs.existsSync(WORKFLOW_BUNDLE_PATH)) {
    throw new SetupError(`${WORKFLOW_BUNDLE_PATH} is missing: \`npm run build\` writes it along with the compiled code`);
  }
  return { workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH } };
}

export interface WorkerDeps {
  config: Config;
  temporalAddress: string;
  db: Knex;
  logger: Logger;
}

/**
 * The worker factory: one Worker per task queue (the main one first), each running every workflow of
 * workflows/index.ts and every activity, adapters over the services built here. Every queue runs every
 * workflow type, so a workflow started on the main queue before its type moved to a queue of its own
 * still completes there.
 */
export async function createWorker(
  deps: WorkerDeps,
  overrides: Partial<WorkerOptions> = {},
): Promise<{ workers: Worker[]; connection: NativeConnection; close: () => Promise<void> }> {
  const { tls } = connectionOptions(deps.config, deps.temporalAddress);
  const connection = await NativeConnection.connect({ address: deps.temporalAddress, tls, apiKey: deps.config.TEMPORAL_API_KEY });
  // A client of its own, for the activities that drive other workflows (an invoice run raising its drafts).
  const temporal = await connectTemporal(deps.config, deps.temporalAddress);
  await ensureSearchAttributes(connection as unknown as Pick<Connection, 'operatorService'>, deps.config.TEMPORAL_NAMESPACE);
  // The event table's partitions are made months ahead, so a worker that cannot make the Schedule now
  // (a server without Schedules) still starts; the next worker to start makes it.
  await ensureUsageEventStorageSchedule(temporal).catch((error: unknown) => deps.logger.warn({ err: error }, 'the usage event storage Schedule was not made'));
  // The worker's log gets what the delivery log must not show (the addresses a refused destination resolved to).
  const serviceDeps = { ...serviceDepsFrom(deps.config, deps.db), logger: deps.logger };
  const services = createServices(serviceDeps);
  // Secrets an older version kept in the clear are sealed before the worker takes any work.
  await services.webhooks.sealPlainSecrets();
  await createIdempotencyService(deps.db, serviceDeps.secrets).sealPlainAnswers();
  const workflowDeps = { db: deps.db, temporal };
  const invoices = createInvoiceService(workflowDeps, resolveContractPlan, invoiceSettlements);
  const code = await workflowCode(deps.config.WORKFLOW_BUNDLE_PATH);
  const invoiceRunControl = createInvoiceRunControlService({ ...workflowDeps, invoiceRuns: services.invoiceRuns });
  const activities = createActivities(services, {
    invoices,
    schedules: createInvoiceRunScheduleService({ ...workflowDeps, runs: invoiceRunControl }),
    chatbot: createChatbotAnswerService({
      db: deps.db,
      ...(serviceDeps.chatbotModel ? { model: serviceDeps.chatbotModel } : {}),
      reads: {
        ...services,
        invoices,
        contracts: createContractService(workflowDeps),
        invoiceRuns: invoiceRunControl,
      },
    }),
  });
  const workers: Worker[] = [];
  for (const taskQueue of distinctQueues(taskQueuesOf(deps.config))) {
    workers.push(
      await Worker.create({
        connection,
        namespace: deps.config.TEMPORAL_NAMESPACE,
        taskQueue,
        ...code,
        activities,
        maxConcurrentActivityTaskExecutions: deps.config.WORKER_MAX_CONCURRENT_ACTIVITIES,
        // Let running activities finish on shutdown; what does not finish in time is retried elsewhere.
        // Past the grace and 15 s more, the worker stops anyway: a local activity still retrying (an invoice
        // step that keeps failing) would otherwise hold a draining worker, and its metrics port, for as long
        // as its retries last.
        shutdownGraceTime: `${deps.config.WORKER_SHUTDOWN_GRACE_SECONDS}s`,
        shutdownForceTime: `${deps.config.WORKER_SHUTDOWN_GRACE_SECONDS + WORKER_FORCE_AFTER_GRACE_SECONDS}s`,
        ...overrides,
      }),
    );
  }
  // The outbox's relay runs beside the worker: it hands the domain events to their subscribers.
  const dispatcher = deps.config.WEBHOOK_RELAY
    ? startEventRelay({ db: deps.db, logger: deps.logger, gathering: { types: ['usage.ingested'], ms: deps.config.USAGE_EVENTS_GATHER_MS }, subscribers: [alertSubscriber(services.alerts), entitlementSubscriber({ periods: services.entitlementPeriods, temporal }), progressiveBillingSubscriber({ progressiveBilling: services.progressiveBilling, temporal }), collectionSubscriber({ temporal }), refundSubscriber({ temporal }), webhookSubscriber({ webhooks: services.webhooks, temporal }), metricsSubscriber()] })
    : undefined;
  return {
    workers,
    connection,
    close: async () => {
      await dispatcher?.stop();
      await temporal.connection.close();
      await connection.close();
    },
  };
}
