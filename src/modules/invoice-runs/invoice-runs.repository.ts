import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export type InvoiceRunStatus = 'running' | 'completed' | 'failed';

export interface InvoiceRunRow {
  id: string;
  organisation_id: string;
  status: InvoiceRunStatus;
  billing_date: Date;
  dry_run: boolean;
  contract_ids: string[] | null;
  schedule_id: string | null;
  workflow_id: string;
  contracts_total: number;
  created_by: string | null;
  started_at: Date;
  completed_at: Date | null;
}

/** An invoice a run made for one contract, or for a dry run one it would make, whole. */
export interface RunInvoice {
  invoiceId: string | null;
  contractPlanId: string;
  currency: string;
  total: string;
  items?: unknown[];
}

export interface RunContractRow {
  contract_id: string;
  status: 'billed' | 'failed';
  invoices: RunInvoice[];
  error_code: string | null;
  error: string | null;
}

export interface BilledPeriod {
  contractPlanId: string;
  planItemId: string;
  from: string;
  to: string;
}

export interface NewRun {
  id: string;
  organisationId: string;
  billingDate: string;
  dryRun: boolean;
  contractIds: string[] | null;
  scheduleId: string | null;
  workflowId: string;
  createdBy: string | null;
}

/** Invoice runs, their per-contract outcomes and the periods billed. `db` may be a transaction. */
export function createInvoiceRunRepository(db: Knex) {
  const runs = (organisationId: string) => db<InvoiceRunRow>('invoice_runs').where({ organisation_id: organisationId });

  return {
    /** A run's row; a second insert of the same workflow finds the first (a retried start, a replayed activity). */
    async insertOrFind(run: NewRun): Promise<InvoiceRunRow> {
      const [inserted] = await db('invoice_runs')
        .insert({
          id: run.id,
          organisation_id: run.organisationId,
          billing_date: run.billingDate,
          dry_run: run.dryRun,
          contract_ids: run.contractIds ? JSON.stringify(run.contractIds) : null,
          schedule_id: run.scheduleId,
          workflow_id: run.workflowId,
          created_by: run.createdBy,
        })
        .onConflict('workflow_id')
        .ignore()
        .returning<InvoiceRunRow[]>('*');
      return inserted ?? (await db<InvoiceRunRow>('invoice_runs').where({ workflow_id: run.workflowId }).first())!;
    },

    async find(organisationId: string, id: string): Promise<InvoiceRunRow | undefined> {
      return runs(organisationId).where({ id }).first();
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<InvoiceRunRow>> {
      return paginate<InvoiceRunRow, InvoiceRunRow>(runs(organisationId).select('*'), paging, {
        searchColumns: ['status', 'schedule_id'],
        orderBy: [
          { column: 'started_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ],
        map: (row) => row,
      });
    },

    async setTotal(id: string, contracts: number): Promise<void> {
      await db('invoice_runs').where({ id }).update({ contracts_total: contracts, updated_at: db.fn.now() });
    },

    async finish(id: string, status: InvoiceRunStatus): Promise<void> {
      await db('invoice_runs').where({ id, status: 'running' }).update({ status, completed_at: db.fn.now(), updated_at: db.fn.now() });
    },

    /** A retry of the failed contracts runs again. */
    async reopen(id: string): Promise<void> {
      await db('invoice_runs').where({ id }).update({ status: 'running', completed_at: null, updated_at: db.fn.now() });
    },

    async contractOutcomes(runId: string): Promise<RunContractRow[]> {
      return db('invoice_run_contracts').where({ invoice_run_id: runId }).orderBy('contract_id').select<RunContractRow[]>('contract_id', 'status', 'invoices', 'error_code', 'error');
    },

    async contractOutcome(runId: string, contractId: string): Promise<RunContractRow | undefined> {
      return db('invoice_run_contracts').where({ invoice_run_id: runId, contract_id: contractId }).first<RunContractRow>('contract_id', 'status', 'invoices', 'error_code', 'error');
    },

    /** The contract's outcome in the run, replacing an earlier one (a failure billed on retry). */
    async recordOutcome(
      organisationId: string,
      runId: string,
      contractId: string,
      outcome: { status: 'billed'; invoices: RunInvoice[] } | { status: 'failed'; code: string; error: string },
    ): Promise<void> {
      const row = {
        invoice_run_id: runId,
        contract_id: contractId,
        organisation_id: organisationId,
        status: outcome.status,
        invoices: JSON.stringify(outcome.status === 'billed' ? outcome.invoices : []),
        error_code: outcome.status === 'failed' ? outcome.code : null,
        error: outcome.status === 'failed' ? outcome.error : null,
        updated_at: db.fn.now(),
      };
      await db('invoice_run_contracts').insert(row).onConflict(['invoice_run_id', 'contract_id']).merge();
    },

    async failedContractIds(runId: string): Promise<string[]> {
      return db('invoice_run_contracts').where({ invoice_run_id: runId, status: 'failed' }).orderBy('contract_id').pluck('contract_id');
    },

    /**
     * Claims the periods for an invoice. Only the periods no one billed yet come back: the primary key
     * (contract plan, plan item, period start) is the guarantee against double billing, whatever runs
     * at the same time.
     */
    async claimPeriods(organisationId: string, invoiceId: string, runId: string | null, periods: BilledPeriod[]): Promise<BilledPeriod[]> {
      if (periods.length === 0) return [];
      const rows = await db('billed_periods')
        .insert(
          periods.map((period) => ({
            organisation_id: organisationId,
            contract_plan_id: period.contractPlanId,
            plan_item_id: period.planItemId,
            period_from: period.from,
            period_to: period.to,
            invoice_id: invoiceId,
            invoice_run_id: runId,
          })),
        )
        .onConflict(['contract_plan_id', 'plan_item_id', 'period_from'])
        .ignore()
        .returning<Array<{ contract_plan_id: string; plan_item_id: string; period_from: Date; period_to: Date }>>(['contract_plan_id', 'plan_item_id', 'period_from', 'period_to']);
      return rows.map((row) => ({ contractPlanId: row.contract_plan_id, planItemId: row.plan_item_id, from: calendarDay(row.period_from), to: calendarDay(row.period_to) }));
    },

    /** The (plan item, period start) keys already billed for a contract plan. */
    async billedKeys(contractPlanId: string): Promise<Array<{ planItemId: string; from: string }>> {
      const rows = await db('billed_periods').where({ contract_plan_id: contractPlanId }).select<Array<{ plan_item_id: string; period_from: Date }>>('plan_item_id', 'period_from');
      return rows.map((row) => ({ planItemId: row.plan_item_id, from: calendarDay(row.period_from) }));
    },
  };
}

export type InvoiceRunRepository = ReturnType<typeof createInvoiceRunRepository>;
