import { domainEvent } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import type { Knex } from 'knex';
import { addDays, billingTimingOf, fullFee, type BillableItem } from '../../domain/billing-periods';
import { AppError, orNotFound } from '../../domain/errors';
import { Decimal, roundToMinor, toDecimal } from '../../domain/money';
import { assertChangeDate, periodEndChangeDate, startsPeriod, unusedFees, type BilledFee } from '../../domain/plan-changes';
import { calendarDay } from '../../db/dates';
import { plansIn } from '../billing-plans';
import { chargesIn, type ChargeRow } from '../charges';
import { creditedByItem } from '../credit-notes';
import { invoicesIn, type Invoice } from '../invoices';
import { organisationToday } from '../organisation-settings';
import { assertUsageUnshared, contractsIn, type Contract, planChangesIn, toPlanChange, type PlanChange, type PlanChangeCredit } from '../contracts';

export interface ChangePlanInput {
  organisationId: string;
  contractId: string;
  /** Chosen before the step runs, so that a retried step finds the change it made. */
  planChangeId: string;
  fromContractPlanId: string;
  toPlanId: string;
  effectiveDate: string;
  prorate: boolean;
}

export interface UndoPlanChangeInput {
  organisationId: string;
  contractId: string;
  planChangeId: string;
}

type Trx = Knex.Transaction;

/** A fee line billed in advance, with what the change needs to credit it. */
type BilledLine = BilledFee & { planItemId: string; title: string; invoiceId: string; invoiceItemId: string };

type InvoiceLine = Invoice['items'][number];

/**
 * The share of a fee line the customer pays once coupons are taken off: each coupon line of its plan item
 * whose days cover the line took its discount off the fee lines it covers, in proportion to their amounts.
 */
function paidShareOf(invoice: Invoice, line: InvoiceLine): string | undefined {
  const amountOf = (item: InvoiceLine) => roundToMinor(toDecimal(item.quantity).times(item.price), invoice.currency);
  const covers = (outer: InvoiceLine, inner: InvoiceLine) => outer.fromDate !== null && outer.toDate !== null && inner.fromDate! >= outer.fromDate && inner.toDate! <= outer.toDate;
  const fees = invoice.items.filter((item) => item.planItemId === line.planItemId && item.couponId === null && item.planChangeId === null && item.fromDate !== null && item.toDate !== null);
  let share = new Decimal(1);
  for (const coupon of invoice.items.filter((item) => item.planItemId === line.planItemId && item.couponId !== null && covers(item, line))) {
    const base = fees.filter((fee) => covers(coupon, fee)).reduce((sum, fee) => sum.plus(amountOf(fee)), new Decimal(0));
    if (base.greaterThan(0)) share = share.minus(amountOf(coupon).negated().dividedBy(base));
  }
  return share.equals(1) ? undefined : Decimal.max(0, share).toFixed();
}

/** A fee's period as one invoice charged it: the runs of days of its line. */
interface ChargedPeriod {
  planItemId: string;
  from: string;
  to: string;
  invoiceId: string;
  runs: Array<{ from: string; to: string }>;
}

/**
 * The old contract plan's in-advance fee lines, one per period billed: the lines of invoices not cancelled,
 * each with the runs of days the ledger says it charged, what is left of it once credit notes and earlier
 * changes have credited part of it, and the share of it paid after coupons. A fee billed by a draft stops
 * the change: a draft's lines can still be recomputed or removed, so nothing stable is there to credit.
 */
async function billedFeeLines(trx: Trx, organisationId: string, contract: Contract, charges: readonly ChargeRow[], items: Map<string, BillableItem>, days: { from: string; to: string | null }): Promise<BilledLine[]> {
  const byLine = new Map<string, ChargedPeriod>();
  for (const charge of charges) {
    const item = items.get(charge.planItemId);
    if (charge.kind !== 'fee' || item === undefined || item.meterId || billingTimingOf(item) !== 'in_advance') continue;
    // By the whole period: one cut by a billing-period change shares its first day with the earlier version's.
    const key = `${charge.periodFrom}|${charge.periodTo}|${charge.planItemId}|${charge.invoiceId}`;
    const period = byLine.get(key) ?? { planItemId: charge.planItemId, from: charge.periodFrom, to: charge.periodTo, invoiceId: charge.invoiceId, runs: [] };
    period.runs.push({ from: charge.from, to: charge.to });
    byLine.set(key, period);
  }
  // In order of period, plan item and invoice: the order of the credits, and of their lines.
  const periods = [...byLine.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, period]) => period);
  // The invoices' row locks, which credit notes take too, so that a note written meanwhile and this change
  // cannot both credit the same part of a line. In id order: two changes never wait on each other crosswise.
  const invoiceIds = [...new Set(periods.map((period) => period.invoiceId))].sort();
  for (const invoiceId of invoiceIds) await invoicesIn(trx).lock(organisationId, invoiceId);
  const invoices = new Map((await invoicesIn(trx).findMany(organisationId, invoiceIds)).map((invoice) => [invoice.id, invoice]));
  const lines: BilledLine[] = [];
  const credited = new Map<string, ReadonlyMap<string, string>>();
  for (const period of periods) {
    const invoice = invoices.get(period.invoiceId);
    if (!invoice || invoice.status === 'cancelled') continue;
    // Each line with the runs the ledger charged within its days: a period cut by a billing-period change
    // can hold another line of the same item (its days under the earlier version), which charged other days.
    const candidates = invoice.items.filter(
      (item) =>
        item.planItemId === period.planItemId &&
        item.couponId === null &&
        item.planChangeId === null &&
        item.fromDate !== null &&
        item.toDate !== null &&
        item.fromDate >= period.from &&
        item.toDate <= period.to,
    );
    for (const line of candidates) {
      const runs = period.runs.filter((run) => line.fromDate! <= run.from && run.to <= line.toDate!);
      // Only lines with days from the change on (through the plan's current last day) have anything to credit.
      if (runs.length === 0 || line.toDate! < days.from || (days.to !== null && line.fromDate! > days.to)) continue;
      if (invoice.status === 'draft') throw AppError.conflict(`invoice ${invoice.id} billed the plan's fee for days the change gives up and is still a draft: raise it first`);
      if (!credited.has(invoice.id)) {
        credited.set(invoice.id, await creditedByItem(trx, { id: invoice.id, contract_id: contract.id }));
      }
      const charged = roundToMinor(toDecimal(line.quantity).times(line.price), contract.currency);
      const paidShare = paidShareOf(invoice, line);
      lines.push({
        planItemId: period.planItemId,
        title: line.title,
        invoiceId: invoice.id,
        invoiceItemId: line.id,
        period: { from: period.from, to: period.to },
        charged: runs,
        fullAmount: fullFee(items.get(period.planItemId)!, contract.currency).toFixed(),
        creditable: Decimal.max(0, charged.minus(credited.get(invoice.id)!.get(line.id) ?? '0')).toFixed(),
        ...(paidShare === undefined ? {} : { paidShare }),
      });
    }
  }
  return lines;
}

/** The last day invoiced in arrears on the contract plan (its usage, its fees billed after the fact). */
function arrearsBilledThrough(charges: readonly ChargeRow[], endDate: string | null, items: Map<string, BillableItem>): string | null {
  let through: string | null = null;
  for (const charge of charges) {
    const item = items.get(charge.planItemId);
    if (!item || billingTimingOf(item) !== 'in_arrears') continue;
    const last = endDate !== null && endDate < charge.periodTo ? endDate : charge.periodTo;
    if (through === null || last > through) through = last;
  }
  return through;
}

/**
 * The steps of a plan change, run by the contract's workflow under its lock: each one transaction under the
 * contract's row lock (which invoice runs take too), safe to retry.
 */
export function createPlanChangeLifecycleService(db: Knex) {
  async function lockOpenContract(trx: Trx, organisationId: string, contractId: string): Promise<Contract> {
    const contracts = contractsIn(trx);
    const status = orNotFound(await contracts.lockStatus(organisationId, contractId), 'Contract');
    if (status === 'ended' || status === 'terminated') throw AppError.conflict(`cannot change the plans of a contract that is ${status}`);
    return (await contracts.find(organisationId, contractId))!;
  }

  return {
    /**
     * Ends the old contract plan the day before the effective date and starts the new plan on it; the old
     * plan's in-advance fees billed for days from then on are credited by the contract's next invoice.
     * `contract.plan_changed`. A second call with the same id answers the change the first made.
     */
    async changePlan(input: ChangePlanInput): Promise<PlanChange> {
      return db.transaction(async (trx) => {
        const changes = planChangesIn(trx);
        const contract = await lockOpenContract(trx, input.organisationId, input.contractId);
        // Looked up under the lock: a retried step that waited behind its own first attempt finds its change.
        const done = await changes.find(input.organisationId, input.contractId, input.planChangeId);
        if (done) return toPlanChange(done, contract.currency);
        const from = contract.plans.find((plan) => plan.id === input.fromContractPlanId);
        if (!from) throw AppError.notFound('Contract plan');
        const plans = plansIn(trx);
        const [oldPlan, newPlan] = await Promise.all([plans.find(input.organisationId, from.planId), plans.find(input.organisationId, input.toPlanId)]);
        if (!newPlan) throw AppError.notFound('Billing plan');
        if (newPlan.currency !== contract.currency) throw AppError.validation(`the plan is priced in ${newPlan.currency}, the contract in ${contract.currency}`, 'body.toPlanId');
        const items = new Map((orNotFound(oldPlan, 'Billing plan').items as unknown as BillableItem[]).map((item) => [item.id, item]));

        const schedule = { billingPeriod: oldPlan!.billingPeriod, billingAnchor: contract.billingAnchor, startDate: from.startDate };
        const today = await organisationToday(trx, input.organisationId);
        const effectiveDate = input.effectiveDate === 'period_end' ? periodEndChangeDate(schedule, today) : input.effectiveDate;
        // The old plan's ledger, read once: what was invoiced in arrears, and the fees to credit.
        const charges = await chargesIn(trx).of([from.id]);
        assertChangeDate(
          { startDate: from.startDate, endDate: from.endDate, contractEndDate: contract.endDate, arrearsBilledThrough: arrearsBilledThrough(charges, from.endDate, items) },
          effectiveDate,
        );
        if (!input.prorate && !startsPeriod(schedule, effectiveDate)) {
          throw AppError.validation(`without proration a change must start a billing period of the old plan (such as "period_end"); ${effectiveDate} falls within one`, 'body.prorate');
        }

        // Suspensions play no part: the days a line charged were paid, even those a later suspension covers.
        const credits: PlanChangeCredit[] = unusedFees(await billedFeeLines(trx, input.organisationId, contract, charges, items, { from: effectiveDate, to: from.endDate }), effectiveDate, contract.currency, from.endDate).map(
          ({ fee, from: firstDay, to, amount, days, periodDays }) => ({
            planItemId: fee.planItemId,
            title: fee.title,
            invoiceId: fee.invoiceId,
            invoiceItemId: fee.invoiceItemId,
            periodFrom: fee.period.from,
            periodTo: fee.period.to,
            from: firstDay,
            to,
            days,
            periodDays,
            amount,
          }),
        );

        const contracts = contractsIn(trx);
        const toContractPlanId = await contracts.addPlan(input.organisationId, contract.id, { planId: newPlan.id, startDate: effectiveDate, endDate: from.endDate, customerEntityIds: from.customerEntityIds });
        await contracts.setPlanEnd(from.id, addDays(effectiveDate, -1));
        await assertUsageUnshared(trx, input.organisationId, contract.id, [toContractPlanId]);
        await changes.insert({
          id: input.planChangeId,
          organisationId: input.organisationId,
          contractId: contract.id,
          fromContractPlanId: from.id,
          toContractPlanId,
          toPlanId: newPlan.id,
          effectiveDate,
          previousEndDate: from.endDate,
          prorate: input.prorate,
          credits,
        });
        const change = toPlanChange((await changes.find(input.organisationId, contract.id, input.planChangeId))!, contract.currency);
        await recordEvent(trx, input.organisationId, domainEvent('contract.plan_changed', { contract: await contracts.find(input.organisationId, contract.id), planChange: change }));
        return change;
      });
    },

    /**
     * Puts the contract back as it was before the change: the old plan's end restored, the new contract plan
     * removed. Only while no invoice has credited the change (the next run's invoice settles it), and only
     * the latest change of a chain. `contract.plan_change_undone`. Undoing an undone change does nothing.
     */
    async undoPlanChange(input: UndoPlanChangeInput): Promise<PlanChange> {
      return db.transaction(async (trx) => {
        const contract = await lockOpenContract(trx, input.organisationId, input.contractId);
        const changes = planChangesIn(trx);
        const change = orNotFound(await changes.lock(input.organisationId, input.contractId, input.planChangeId), 'Plan change');
        if (change.status === 'undone') return toPlanChange(change, contract.currency);
        if (change.status === 'settled') {
          const by = change.settled_invoice_id ? `invoice ${change.settled_invoice_id} has credited the change` : "the change was credited to the customer's credit balance";
          throw AppError.conflict(`${by}: change the plan again instead`);
        }
        const added = change.to_contract_plan_id!;
        // Changes are undone latest first: an earlier one's undo would bring back days a later one gave away.
        const latest = await changes.latestStanding(input.contractId);
        if (latest && latest.id !== change.id) throw AppError.conflict(`plan change ${latest.id} was made after this one: undo it first`);
        const contracts = contractsIn(trx);
        if ((await contracts.planHasMilestones(added)) || (await invoicesIn(trx).anyForContractPlan(added))) {
          throw AppError.conflict('the new contract plan already has milestones or invoices of its own');
        }
        // The old plan ends where it would have without the change: the new plan took its end over and has
        // moved with the contract's end since, so it holds that end now, not the one the change recorded
        // (kept at the contract plan's start if the contract came to end before it: then the contract's end).
        const took = contract.plans.find((plan) => plan.id === added);
        const previousEnd = change.previous_end_date ? calendarDay(change.previous_end_date) : null;
        const restoredEnd = !took ? previousEnd : contract.endDate !== null && contract.endDate < took.startDate ? contract.endDate : took.endDate;
        await changes.markUndone(change.id);
        await contracts.deletePlan(added);
        // A standing change always has its old plan: only an earlier change, undone after it, could remove that.
        if (change.from_contract_plan_id) await contracts.setPlanEnd(change.from_contract_plan_id, restoredEnd);
        const undone = toPlanChange((await changes.find(input.organisationId, input.contractId, change.id))!, contract.currency);
        await recordEvent(trx, input.organisationId, domainEvent('contract.plan_change_undone', { contract: await contracts.find(input.organisationId, contract.id), planChange: undone }));
        return undone;
      });
    },
  };
}

export type PlanChangeLifecycleService = ReturnType<typeof createPlanChangeLifecycleService>;
