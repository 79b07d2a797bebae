import type { Knex } from 'knex';
import { bulkInsert } from '../../db/bulk';
import { Decimal } from '../../domain/money';
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
  /** Given to every invoice the run makes. */
  customer_reference: string | null;
  purchase_order_number: string | null;
  started_at: Date;
  completed_at: Date | null;
}

/** An invoice a run made for one contract, or for a dry run one it would make, whole. */
export interface RunInvoice {
  invoiceId: string | null;
  contractPlanId: string;
  currency: string;
  total: string;
  /** A dry run's lines, as planned (the planned line's other fields too). */
  items?: Array<{ title: string; quantity: string; price: string; fromDate: string; toDate: string; planItemId?: string; description?: string; dimensions?: Record<string, string | null> }>;
}

export interface RunContractRow {
  contract_id: string;
  status: 'billed' | 'failed';
  invoices: RunInvoice[];
  error_code: string | null;
  error: string | null;
}

export type ContractOutcome = { status: 'billed'; invoices: RunInvoice[] } | { status: 'failed'; code: string; error: string };

export interface RunSummary {
  done: number;
  failed: number;
  /** Per currency: the sum of the invoices' totals, and how many were made (none for a dry run). */
  totals: Array<{ currency: string; amount: string; created: number }>;
}

const OUTCOME_COLUMNS = [
  ['invoice_run_id', 'text'],
  ['contract_id', 'text'],
  ['organisation_id', 'text'],
  ['status', 'text'],
  ['invoices', 'jsonb'],
  ['currency', 'text'],
  ['total', 'numeric'],
  ['invoices_made', 'integer'],
  ['error_code', 'text'],
  ['error', 'text'],
] as const;

/** A contract's invoices are in its currency: their sum, and how many exist (none in a dry run). */
function outcomeTotals(outcome: ContractOutcome): { currency: string | null; total: string | null; invoices_made: number } {
  if (outcome.status !== 'billed' || outcome.invoices.length === 0) return { currency: null, total: null, invoices_made: 0 };
  return {
    currency: outcome.invoices[0]!.currency,
    total: outcome.invoices.reduce((sum, invoice) => sum.plus(invoice.total), new Decimal(0)).toFixed(),
    invoices_made: outcome.invoices.filter((invoice) => invoice.invoiceId !== null).length,
  };
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
  customerReference?: string | null;
  purchaseOrderNumber?: string | null;
}

/** Invoice runs, their per-contract outcomes and the periods billed. `db` may be a transaction. */
export function createInvoiceRunRepository(db: Knex) {
  const runs = (organisationId: string) => db<InvoiceRunRow>('invoice_runs').where({ organisation_id: organisationId });

  return {
    /** A run's row; a second insert of the same workflow finds the first (a retried start, a replayed activity). */
    async findByWorkflow(workflowId: string): Promise<InvoiceRunRow | undefined> {
      return db<InvoiceRunRow>('invoice_runs').where({ workflow_id: workflowId }).first();
    },

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
          customer_reference: run.customerReference ?? null,
          purchase_order_number: run.purchaseOrderNumber ?? null,
        })
        .onConflict('workflow_id')
        .ignore()
        .returning<InvoiceRunRow[]>('*');
      return inserted ?? (await this.findByWorkflow(run.workflowId))!;
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

    /** Ends a running run; answers whether it was running (a retried activity finds it ended). */
    async finish(id: string, status: InvoiceRunStatus): Promise<boolean> {
      return (await db('invoice_runs').where({ id, status: 'running' }).update({ status, completed_at: db.fn.now(), updated_at: db.fn.now() })) > 0;
    },

    async findById(id: string): Promise<InvoiceRunRow | undefined> {
      return db<InvoiceRunRow>('invoice_runs').where({ id }).first();
    },

    /** A retry of the failed contracts runs again. */
    async reopen(id: string): Promise<void> {
      await db('invoice_runs').where({ id }).update({ status: 'running', completed_at: null, updated_at: db.fn.now() });
    },

    /** A dry run's outcomes, with the invoices it would make, whole. */
    async contractOutcomes(runId: string): Promise<RunContractRow[]> {
      return db('invoice_run_contracts').where({ invoice_run_id: runId }).orderBy('contract_id').select<RunContractRow[]>('contract_id', 'status', 'invoices', 'error_code', 'error');
    },

    /** Progress, invoices made and totals per currency, counted in Postgres from the outcomes' columns. */
    async summary(runId: string): Promise<RunSummary> {
      const rows = await db('invoice_run_contracts')
        .where({ invoice_run_id: runId })
        .groupBy('currency')
        .orderBy('currency')
        .select<Array<{ currency: string | null; done: number; failed: number; amount: string | null; created: number }>>(
          'currency',
          db.raw('count(*)::int as done'),
          db.raw("(count(*) filter (where status = 'failed'))::int as failed"),
          db.raw('sum(total)::text as amount'),
          db.raw('sum(invoices_made)::int as created'),
        );
      return {
        done: rows.reduce((sum, row) => sum + row.done, 0),
        failed: rows.reduce((sum, row) => sum + row.failed, 0),
        totals: rows.flatMap((row) => (row.currency === null ? [] : [{ currency: row.currency, amount: row.amount ?? '0', created: row.created }])),
      };
    },

    async failures(runId: string): Promise<Array<Pick<RunContractRow, 'contract_id' | 'error_code' | 'error'>>> {
      return db('invoice_run_contracts').where({ invoice_run_id: runId, status: 'failed' }).orderBy('contract_id').select('contract_id', 'error_code', 'error');
    },

    /** The invoices the run made, by contract. */
    async invoiceIds(runId: string): Promise<string[]> {
      const rows = await db('invoice_run_contracts as c')
        .crossJoin(db.raw('jsonb_array_elements(c.invoices) with ordinality as invoice(body, position)'))
        .where('c.invoice_run_id', runId)
        .whereRaw("invoice.body ->> 'invoiceId' is not null")
        .orderBy([{ column: 'c.contract_id' }, { column: 'invoice.position' }])
        .select<Array<{ id: string }>>(db.raw("invoice.body ->> 'invoiceId' as id"));
      return rows.map((row) => row.id);
    },

    /** The status recorded for each of the contracts the run has reached among `contractIds`. */
    async outcomeStatuses(runId: string, contractIds: string[]): Promise<Map<string, RunContractRow['status']>> {
      if (contractIds.length === 0) return new Map();
      const rows = await db('invoice_run_contracts').where({ invoice_run_id: runId }).whereIn('contract_id', contractIds).select<Array<Pick<RunContractRow, 'contract_id' | 'status'>>>('contract_id', 'status');
      return new Map(rows.map((row) => [row.contract_id, row.status]));
    },

    /** The contracts' outcomes in the run, in one multi-row upsert, replacing earlier ones (a failure billed on retry). */
    async recordOutcomes(organisationId: string, runId: string, outcomes: Array<{ contractId: string; outcome: ContractOutcome }>): Promise<void> {
      const rows = outcomes.map(({ contractId, outcome }) => ({
        invoice_run_id: runId,
        contract_id: contractId,
        organisation_id: organisationId,
        status: outcome.status,
        invoices: outcome.status === 'billed' ? outcome.invoices : [],
        ...outcomeTotals(outcome),
        error_code: outcome.status === 'failed' ? outcome.code : null,
        error: outcome.status === 'failed' ? outcome.error : null,
      }));
      await bulkInsert(db, 'invoice_run_contracts', OUTCOME_COLUMNS, rows, {
        onConflict:
          '(invoice_run_id, contract_id) DO UPDATE SET status = excluded.status, invoices = excluded.invoices, currency = excluded.currency, total = excluded.total, invoices_made = excluded.invoices_made, error_code = excluded.error_code, error = excluded.error, updated_at = now()',
      });
    },

  };
}

export type InvoiceRunRepository = ReturnType<typeof createInvoiceRunRepository>;
