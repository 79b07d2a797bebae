import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { calendarDay } from '../../db/dates';
import { addDays } from '../../domain/billing-periods';
import { AppError, orNotFound } from '../../domain/errors';
import { formatAmount, formatExact } from '../../domain/money';
import { sendingFormerNames } from '../../http/former-names';
import type { Page, PageQuery } from '../../http/paging';
import type { WorkflowServiceDeps } from '../../temporal/client';
import type { InvoiceRunInput } from '../../../workflows/invoice-run.types';
import { invoiceRunWorkflowId, searchAttributes } from '../../../workflows/ids';
import { dayIn } from '../../domain/zoned-days';
import { contractsIn } from '../contracts';
import { organisationToday } from '../organisation-settings';
import { createInvoiceRunRepository, type InvoiceRunRow } from './invoice-runs.repository';
import { toRun } from './invoice-run-view';
import { CURRENT_USAGE_RENAMES, type InvoiceRun } from './invoice-runs.schemas';
import type { InvoiceRunService } from './invoice-runs.service';
import { periodToDateUsage, type PeriodToDateUsage } from './period-usage';

/** How far ahead a billing date may lie: a run or a preview bills at most a year of periods ahead. */
export const BILLING_HORIZON_DAYS = 366;

/** Today in the organisation's time zone, and the last billing date it may ask for. */
async function horizonOf(db: Knex, organisationId: string): Promise<{ today: string; last: string }> {
  const today = await organisationToday(db, organisationId);
  return { today, last: addDays(today, BILLING_HORIZON_DAYS) };
}

/** A date that drives work lies within the horizon: 400 naming the field otherwise. */
function assertWithinHorizon(date: string, horizon: { last: string }, path: string): void {
  if (date > horizon.last) throw AppError.validation(`must be at most ${BILLING_HORIZON_DAYS} days ahead of today in the organisation's time zone: ${horizon.last} or earlier`, path);
}

/** How long a retry waits for the run's previous execution to close. */
const CLOSE_WAIT_MS = 10_000;

/** How often the read repair asks Temporal whether a running run's workflow is still open. */
const DESCRIBE_INTERVAL_MS = 5_000;

/** Invoice runs as the API drives them: each is recorded, then run by its workflow `invoice-run:{id}`. */
export function createInvoiceRunControlService(deps: WorkflowServiceDeps & { invoiceRuns: InvoiceRunService }) {
  const runs = createInvoiceRunRepository(deps.db);
  const { workflows } = deps.temporal;
  /** When each running run's workflow was last described, for the read repair below. */
  const describedAt = new Map<string, number>();

  /**
   * Read repair: a run still `running` whose workflow closed without finishing it (terminated, timed out
   * or cancelled from the Temporal UI) is marked failed; a retry resumes it.
   */
  async function repaired(row: InvoiceRunRow): Promise<InvoiceRunRow> {
    if (row.status !== 'running') return row;
    // A client polling a run's progress asks Temporal at most once per interval.
    const now = Date.now();
    if ((describedAt.get(row.id) ?? 0) > now - DESCRIBE_INTERVAL_MS) return row;
    if (describedAt.size >= 10_000) describedAt.clear();
    describedAt.set(row.id, now);
    try {
      const description = await deps.temporal.bounded(() => workflows.handle('invoiceRunWorkflow', row.workflow_id).describe());
      if (description.status.name === 'RUNNING' || description.status.name === 'COMPLETED') return row;
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) return row;
    }
    // Finished as the workflow's own last step finishes a run: with `invoice_run.failed` announced.
    await deps.invoiceRuns.finish({ runId: row.id, failed: true });
    return (await runs.find(row.organisation_id, row.id))!;
  }

  /**
   * Waits for the run's previous execution to close: its last activity records the run finished a
   * moment before the workflow itself completes, and a new execution of the same id can only start after.
   */
  async function closed(workflowId: string): Promise<void> {
    const ended = (error: unknown) => error instanceof WorkflowNotFoundError || error instanceof WorkflowFailedError;
    await deps.temporal.bounded(
      () =>
        workflows
          .handle('invoiceRunWorkflow', workflowId)
          .result()
          .then(() => undefined, (error: unknown) => {
            if (!ended(error)) throw error;
          }),
      CLOSE_WAIT_MS,
    );
  }

  async function view(organisationId: string, id: string): Promise<InvoiceRun> {
    const row = await repaired(orNotFound(await runs.find(organisationId, id), 'Invoice run'));
    return toRun(runs, row);
  }

  /** The run's workflow: `invoice-run:{id}`, or for a retry the id its run recorded (a Schedule's run has the Schedule's). */
  async function startWorkflow(input: InvoiceRunInput & { runId: string }, workflowId = invoiceRunWorkflowId(input.runId)): Promise<void> {
    await deps.temporal.bounded(() =>
      workflows.start('invoiceRunWorkflow', {
        workflowId,
        args: [input],
        ...searchAttributes({ organisationId: input.organisationId }),
      }),
    );
  }

  /** Records a run, then starts its workflow `invoice-run:{id}`: the run's id is known before anything runs. */
  async function launch(
    organisationId: string,
    createdBy: string,
    run: Omit<InvoiceRunInput, 'organisationId' | 'runId'> & { billingDate: string },
    references: { customerReference?: string; purchaseOrderNumber?: string } = {},
  ): Promise<InvoiceRun> {
    const id = newId('run');
    const dryRun = run.dryRun ?? false;
    await runs.insertOrFind({
      id,
      organisationId,
      billingDate: run.billingDate,
      dryRun,
      contractIds: run.contractIds ?? null,
      scheduleId: run.scheduleId ?? null,
      workflowId: invoiceRunWorkflowId(id),
      createdBy,
      ...references,
    });
    try {
      await startWorkflow({ ...run, organisationId, runId: id, dryRun });
    } catch (error) {
      // No run without the workflow that runs it.
      await runs.finish(id, 'failed');
      throw error;
    }
    return view(organisationId, id);
  }

  return {
    view,

    async start(organisationId: string, createdBy: string, body: { billingDate?: string; contractIds?: string[]; dryRun?: boolean; customerReference?: string; purchaseOrderNumber?: string }): Promise<InvoiceRun> {
      const horizon = await horizonOf(deps.db, organisationId);
      const billingDate = body.billingDate ?? horizon.today;
      assertWithinHorizon(billingDate, horizon, 'body.billingDate');
      if (body.contractIds) {
        const known = await contractsIn(deps.db).billableIds(organisationId, '9999-12-31', body.contractIds);
        if (known.length !== new Set(body.contractIds).size) throw AppError.notFound('Contract');
      }
      return launch(organisationId, createdBy, { billingDate, contractIds: body.contractIds, dryRun: body.dryRun }, { customerReference: body.customerReference, purchaseOrderNumber: body.purchaseOrderNumber });
    },

    /**
     * A schedule's run, started now (`POST /invoice-run-schedules/{id}/trigger`): what the schedule's own
     * action starts (every contract with something due, on today's date in the schedule's zone, billing
     * usage as it stood when the run began), but recorded first, so that the answer is the run itself.
     */
    async startForSchedule(organisationId: string, createdBy: string, schedule: { id: string; timezone: string }): Promise<InvoiceRun> {
      return launch(organisationId, createdBy, { billingDate: dayIn(schedule.timezone), timezone: schedule.timezone, scheduleId: schedule.id });
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<InvoiceRun>> {
      const page = await runs.list(organisationId, paging);
      return { ...page, items: await Promise.all(page.items.map((row) => toRun(runs, row))) };
    },

    /**
     * Bills again, in a new execution of the same workflow id, what the run did not bill: its failed
     * contracts, and those a failed run never reached. Contracts it billed are skipped.
     */
    async retry(organisationId: string, id: string): Promise<InvoiceRun> {
      const row = await repaired(orNotFound(await runs.find(organisationId, id), 'Invoice run'));
      if (row.status === 'running') throw AppError.conflict('The run is still running');
      if (row.status === 'completed' && (await runs.summary(row.id)).failed === 0) throw AppError.conflict('The run has no failed contract to retry');
      // The same contracts as the first execution: its pages skip those already billed.
      const contractIds = row.contract_ids ?? undefined;
      await closed(row.workflow_id);
      await runs.reopen(row.id);
      const billingDate = calendarDay(row.billing_date);
      try {
        await startWorkflow({ organisationId, runId: row.id, billingDate, contractIds, dryRun: row.dry_run }, row.workflow_id);
      } catch (error) {
        await runs.finish(row.id, row.status);
        if (error instanceof WorkflowExecutionAlreadyStartedError) throw AppError.conflict("The run's previous execution is still closing; retry in a moment");
        throw error;
      }
      return view(organisationId, id);
    },

    /** The contract's usage charges of its billing period that holds `date`, through now; nothing is stored. */
    async currentUsage(organisationId: string, contractId: string, asked?: string): Promise<PeriodToDateUsage & { asOf: string }> {
      const horizon = await horizonOf(deps.db, organisationId);
      const date = asked ?? horizon.today;
      assertWithinHorizon(date, horizon, 'query.date');
      return sendingFormerNames(await periodToDateUsage(deps.db, organisationId, contractId, new Date(), date), CURRENT_USAGE_RENAMES);
    },

    /** What a run on `date` would create for the contract, computed as a dry run would; nothing is stored. */
    async upcoming(organisationId: string, contractId: string, asked?: string) {
      const horizon = await horizonOf(deps.db, organisationId);
      const date = asked ?? horizon.today;
      assertWithinHorizon(date, horizon, 'query.date');
      const planned = await deps.invoiceRuns.plan(organisationId, contractId, date);
      return {
        contractId,
        billingDate: date,
        // As the API shows every invoice: the total in minor units, quantities and prices exact.
        invoices: planned.map(({ charges: _charges, ...invoice }) => ({
          ...invoice,
          total: formatAmount(invoice.total, invoice.currency),
          items: invoice.items.map((item) => ({ ...item, quantity: formatExact(item.quantity), price: formatExact(item.price) })),
        })),
      };
    },
  };
}

export type InvoiceRunControlService = ReturnType<typeof createInvoiceRunControlService>;
