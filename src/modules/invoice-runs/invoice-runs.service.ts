import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { newId } from '../../db/ids';
import { deterministicDatabaseError } from '../../db/errors';
import { dueOn, type BillableItem, type Suspension } from '../../domain/billing-periods';
import { AppError, DomainError } from '../../domain/errors';
import { Decimal, formatAmount, toDecimal } from '../../domain/money';
import { createBillingPlanRepository } from '../billing-plans/billing-plans.repository';
import { createContractRepository } from '../contracts/contracts.repository';
import { createEntityRepository } from '../entities/entities.repository';
import { ratedLine } from '../invoices/invoice-items.service';
import { createInvoiceRepository, type NewInvoiceItem } from '../invoices/invoices.repository';
import { createMeterRepository } from '../meters/meters.repository';
import { createInvoiceRunRepository, type BilledPeriod, type RunInvoice } from './invoice-runs.repository';

export interface BeginRunInput {
  organisationId: string;
  runId?: string;
  workflowId: string;
  billingDate: string;
  dryRun: boolean;
  contractIds?: string[];
  scheduleId?: string;
  createdBy?: string;
}

export interface BillContractInput {
  organisationId: string;
  runId: string;
  contractId: string;
  billingDate: string;
  dryRun: boolean;
}

export type ContractOutcome = { status: 'billed'; invoices: RunInvoice[] } | { status: 'failed'; code: string; error: string };

/** A draft invoice for one contract plan: what a run creates, or shows for a dry run or an upcoming invoice. */
export interface PlannedInvoice {
  contractPlanId: string;
  currency: string;
  fromDate: string;
  toDate: string;
  /** The sum of the lines, before tax (taxes are applied when the invoice is raised). */
  total: string;
  items: Array<NewInvoiceItem & { fromDate: string; toDate: string }>;
  periods: BilledPeriod[];
}

const nextDay = (day: string) => {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + 1);
  return date;
};

const earliest = (days: string[]) => days.reduce((a, b) => (b < a ? b : a));
const latest = (days: string[]) => days.reduce((a, b) => (b > a ? b : a));

/**
 * The steps of an invoice run: record it, list what it bills, bill one contract at a time. Each
 * contract is one transaction under its row lock, and every (contract plan, plan item, period) it bills
 * is claimed in `billed_periods`, so reruns, concurrent runs and retried activities bill nothing twice.
 */
export function createInvoiceRunService(db: Knex) {
  /** What each contract plan of a contract owes on the billing date, priced; nothing is stored. */
  async function plan(trx: Knex, organisationId: string, contractId: string, billingDate: string): Promise<PlannedInvoice[]> {
    const contracts = createContractRepository(trx);
    const contract = await contracts.find(organisationId, contractId);
    if (!contract) throw AppError.notFound('Contract');
    if (contract.status === 'draft') return [];
    const suspensions: Suspension[] = (await contracts.suspensions(contractId)).map((row) => ({ from: calendarDay(row.from_date), to: row.to_date ? calendarDay(row.to_date) : null }));
    const plans = createBillingPlanRepository(trx);
    const runs = createInvoiceRunRepository(trx);
    const entityIds = await createEntityRepository(trx).customerEntityIds(organisationId, contract.customerId);
    const meters = createMeterRepository(trx);

    const planned: PlannedInvoice[] = [];
    for (const contractPlan of contract.plans) {
      const billingPlan = await plans.find(organisationId, contractPlan.planId);
      if (!billingPlan) continue;
      const items = billingPlan.items as unknown as Array<BillableItem & { name: string }>;
      const billed = (await runs.billedKeys(contractPlan.id)).map((key) => ({ planItemId: key.planItemId, periodFrom: key.from }));
      // A terminated or ended contract's end date is its last day served (the contract lifecycle moves it up).
      const due = dueOn(
        billingDate,
        { billingPeriod: billingPlan.billingPeriod, billingAnchor: contract.billingAnchor, currency: contract.currency, startDate: contractPlan.startDate, endDate: contractPlan.endDate, contractEndDate: contract.endDate },
        items,
        billed,
        suspensions,
      );
      if (due.length === 0) continue;

      const lines: PlannedInvoice['items'] = [];
      const periods: BilledPeriod[] = [];
      for (const dueItem of due) {
        const item = items.find((candidate) => candidate.id === dueItem.planItemId)!;
        for (const period of dueItem.periods) {
          periods.push({ contractPlanId: contractPlan.id, planItemId: item.id, from: period.period.from, to: period.period.to });
          if (dueItem.kind === 'fee') {
            const fee = period.fee!;
            const prorated = fee.days === fee.periodDays ? '' : ` (${fee.days} of ${fee.periodDays} days)`;
            lines.push({ planItemId: item.id, title: item.name, description: `${period.from} to ${period.to}${prorated}`, quantity: '1', price: fee.amount, fromDate: period.from, toDate: period.to });
          } else {
            const meter = await meters.findById(organisationId, item.meterId!);
            if (!meter) throw AppError.conflict(`the meter of plan item ${item.id} no longer exists`);
            const usage = entityIds.length ? await meters.aggregate(meter, { customerEntityIds: entityIds, from: new Date(`${period.from}T00:00:00Z`), to: nextDay(period.to) }) : { value: null };
            const quantity = toDecimal(usage.value ?? 0);
            lines.push({ ...ratedLine(item, quantity, contract.currency), fromDate: period.from, toDate: period.to });
          }
        }
      }
      const total = lines.reduce((sum, line) => sum.plus(toDecimal(line.quantity).times(line.price)), new Decimal(0));
      planned.push({
        contractPlanId: contractPlan.id,
        currency: contract.currency,
        fromDate: earliest(lines.map((line) => line.fromDate)),
        toDate: latest(lines.map((line) => line.toDate)),
        total: formatAmount(total, contract.currency),
        items: lines,
        periods,
      });
    }
    return planned;
  }

  /** A failure no retry can mend (a meter gone, a price that cannot be priced): the contract fails alone. */
  function businessFailure(error: unknown): AppError | undefined {
    if (error instanceof AppError) return error.kind === 'unavailable' || error.kind === 'internal' ? undefined : error;
    // Pricing and currencies refuse what cannot be priced.
    if (error instanceof DomainError) return AppError.validation(error.message);
    return deterministicDatabaseError(error);
  }

  return {
    plan: (organisationId: string, contractId: string, billingDate: string) => plan(db, organisationId, contractId, billingDate),

    /** Records the run (once per workflow) and lists the contracts it bills: those asked, else every one started by the billing date. */
    async begin(input: BeginRunInput): Promise<{ runId: string; contractIds: string[] }> {
      const runs = createInvoiceRunRepository(db);
      // A run started through the API was recorded before its workflow; one a Schedule started records itself here.
      const run = (input.runId ? await runs.find(input.organisationId, input.runId) : undefined) ?? await runs.insertOrFind({
        id: input.runId ?? newId('run'),
        organisationId: input.organisationId,
        billingDate: input.billingDate,
        dryRun: input.dryRun,
        contractIds: input.contractIds ?? null,
        scheduleId: input.scheduleId ?? null,
        workflowId: input.workflowId,
        createdBy: input.createdBy ?? null,
      });
      const contractIds = await createContractRepository(db).billableIds(input.organisationId, input.billingDate, input.contractIds);
      if (!input.contractIds || run.contracts_total === 0) await runs.setTotal(run.id, contractIds.length);
      return { runId: run.id, contractIds };
    },

    /**
     * Bills one contract: a draft invoice per contract plan with something due, its periods claimed in
     * the same transaction. A contract already billed by this run answers its recorded outcome.
     */
    async billContract(input: BillContractInput): Promise<ContractOutcome> {
      const runs = createInvoiceRunRepository(db);
      const earlier = await runs.contractOutcome(input.runId, input.contractId);
      if (earlier?.status === 'billed') return { status: 'billed', invoices: earlier.invoices };
      try {
        return await db.transaction(async (trx) => {
          // Runs that meet on a contract take turns; the second sees what the first claimed.
          if (!(await createContractRepository(trx).lock(input.organisationId, input.contractId))) throw AppError.notFound('Contract');
          const planned = await plan(trx, input.organisationId, input.contractId, input.billingDate);
          const contract = (await createContractRepository(trx).find(input.organisationId, input.contractId))!;
          const made: RunInvoice[] = [];
          for (const invoice of planned) {
            if (input.dryRun) {
              made.push({ invoiceId: null, contractPlanId: invoice.contractPlanId, currency: invoice.currency, total: invoice.total, items: invoice.items });
              continue;
            }
            const row = await createInvoiceRepository(trx).create({
              organisationId: input.organisationId,
              customerId: contract.customerId,
              contractId: contract.id,
              contractPlanId: invoice.contractPlanId,
              currency: invoice.currency,
              date: input.billingDate,
              fromDate: invoice.fromDate,
              toDate: invoice.toDate,
              invoiceRunId: input.runId,
              items: invoice.items,
            });
            const claimed = await createInvoiceRunRepository(trx).claimPeriods(input.organisationId, row.id, input.runId, invoice.periods);
            // Under the contract's lock nobody else can have claimed them: a mismatch is a bug, and rolls back.
            if (claimed.length !== invoice.periods.length) throw new Error(`periods of contract plan ${invoice.contractPlanId} were billed meanwhile`);
            made.push({ invoiceId: row.id, contractPlanId: invoice.contractPlanId, currency: invoice.currency, total: invoice.total });
          }
          const outcome: ContractOutcome = { status: 'billed', invoices: made };
          await createInvoiceRunRepository(trx).recordOutcome(input.organisationId, input.runId, input.contractId, outcome);
          return outcome;
        });
      } catch (error) {
        const failure = businessFailure(error);
        if (!failure) throw error;
        const outcome: ContractOutcome = { status: 'failed', code: String(failure.items[0]?.code ?? failure.kind), error: failure.items.map((item) => item.message).join('; ') || failure.message };
        await runs.recordOutcome(input.organisationId, input.runId, input.contractId, outcome);
        return outcome;
      }
    },

    /** The invoices the run made, in the order their contracts were billed. */
    async invoiceIdsOf(organisationId: string, runId: string): Promise<string[]> {
      const outcomes = await createInvoiceRunRepository(db).contractOutcomes(runId);
      return outcomes.flatMap((outcome) => outcome.invoices.flatMap((invoice) => (invoice.invoiceId ? [invoice.invoiceId] : [])));
    },

    async finish(input: { runId: string; failed?: boolean }): Promise<void> {
      await createInvoiceRunRepository(db).finish(input.runId, input.failed ? 'failed' : 'completed');
    },
  };
}

export type InvoiceRunService = ReturnType<typeof createInvoiceRunService>;
