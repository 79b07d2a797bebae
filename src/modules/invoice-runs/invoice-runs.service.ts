import { domainEvent } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { currencyMinorUnits } from '../../domain/currencies';
import { newId } from '../../db/ids';
import { deterministicDatabaseError } from '../../db/errors';
import { addDays } from '../../domain/billing-periods';
import { AppError, DomainError, InvariantError, orNotFound } from '../../domain/errors';
import type { Combination } from '../../domain/dimensional-prices';
import { Decimal, formatAmount, roundToMinor, sumAmounts, toDecimal } from '../../domain/money';
import { billedPeriodKey, couponDiscounts, discountLinesOf, type ContractCoupon } from '../../domain/rating-coupons';
import { feesDue, hasDimensionalPrices, rateDimensionalUsage, rateUsage, shareDiscounts, usageWindows, type Charge, type ChargeLedger, type RatedCharge, type RatingTerms, type UsageWindow } from '../../domain/rating';
import { startOfDayIn } from '../../domain/zoned-days';
import { chargesIn, type ChargeRow } from '../charges';
import { contractTaxesOfMany, type ContractTax, contractsIn, planChangesIn, taxesInForce, type PlanChangeRow } from '../contracts';
import { creditsIn } from '../credits';
import { couponsIn, type ActiveContractCoupon } from '../coupons';
import { findEffectiveRate } from '../fx-rates';
import { invoiceOverflow, invoicesIn, itemColumnProblem, priceInvoice, type InvoiceItemRow, type NewInvoiceItem, type PricedLine } from '../invoices';
import { metersIn, specOf } from '../meters';
import { aggregateUsage } from '../usage';
import { groupBy, push, ratedContractPlan, ratingContextOf } from './rating-context';
import { finishedRun } from './invoice-run-view';
import { createInvoiceRunRepository, type ContractOutcome, type InvoiceRunRow, type RunInvoice } from './invoice-runs.repository';
import type { BeginRunInput as BeginRunStepInput, BillContractsInput } from '../../../workflows/invoice-run.types';

export type { BillContractsInput };

export type { ContractOutcome };

/** A draft invoice of a contract plan, to price again. */
export interface DraftToReprice {
  organisationId: string;
  invoiceId: string;
  contractId: string;
  contractPlanId: string;
  date: string;
  span: { from: string; to: string } | null;
}

/** A run's first step as the workflow asks for it, and as the API begins a run it records who asked. */
export interface BeginRunInput extends BeginRunStepInput {
  createdBy?: string;
}

/** How a run pages its contracts: contracts billed together in one transaction, and pages at once. */
export interface InvoiceRunPaging {
  pageSize: number;
  pagesInFlight: number;
}

/** A page of a run: the billable contracts whose ids lie from `from` to `to`, both included. */
export interface PageRange {
  from: string;
  to: string;
}


/** A draft invoice for one contract plan: what a run creates, or shows for a dry run or an upcoming invoice. */
export interface PlannedInvoice {
  contractPlanId: string;
  currency: string;
  fromDate: string;
  toDate: string;
  /** The sum of the lines, before tax (taxes are applied when the invoice is raised). */
  total: string;
  items: Array<NewInvoiceItem & { fromDate: string; toDate: string }>;
  /** What the priced lines charge, for the ledger: the first lines, one entry each (discounts and credits follow them). */
  charges: Charge[][];
}

const earliest = (days: string[]) => days.reduce((a, b) => (b < a ? b : a));
const latest = (days: string[]) => days.reduce((a, b) => (b > a ? b : a));

type Line = PlannedInvoice['items'][number];

/** A plan change the contract's invoices credit: the invoice (by index) with its lines, and what did not fit on it. */
interface CreditedChange {
  id: string;
  /** The planned invoice its lines are on; null: none, the whole credit went to the balance. */
  invoiceIndex: number | null;
  currency: string;
  toBalance: string | null;
}

/**
 * A contract's plan, or why it cannot be billed; `coupons`: the contract coupons that served, and for how
 * many periods; `planChanges`: the plan changes its invoices credit.
 */
type Planned =
  | { customerId: string; invoices: PlannedInvoice[]; coupons?: Array<{ id: string; periods: number }>; planChanges?: CreditedChange[] }
  | { failure: AppError };

/**
 * A line of a contract plan's invoice, in the order the engine gave them: null until its usage is rated, or
 * when it owes nothing; the lines of an item priced per dimension value, one per price entry (or value shown).
 */
type Slot = RatedCharge | RatedCharge[] | null;

/** A usage window waiting for its meter's aggregate: the usage of the contract plan's entities over the window. */
interface PendingUsage {
  contractId: string;
  contractPlanId: string;
  entityIds: readonly string[];
  terms: RatingTerms;
  ledger: ChargeLedger;
  window: UsageWindow;
  /** Where the rated line goes. */
  slots: Slot[];
  index: number;
}

/** A contract plan's window of a meter. */
const usageKey = (usage: PendingUsage) => `${usage.contractPlanId}|${usage.window.from}|${usage.window.to}`;


/**
 * The contract's coupons' discount lines on its invoices (the rating engine's), and the periods each served.
 * `earlier`: the charges of the contract's earlier documents that coupons discount (not progressive
 * ones), and the coupon lines on them by invoice.
 */
function applyCoupons(invoices: PlannedInvoice[], coupons: ActiveContractCoupon[], earlier: { charges: readonly ChargeRow[]; couponLines: ReadonlyMap<string, readonly InvoiceItemRow[]> }): Array<{ id: string; periods: number }> {
  const billedPeriods = new Set(earlier.charges.map((charge) => billedPeriodKey(charge.contractPlanId, charge.planItemId, { from: charge.periodFrom, to: charge.periodTo })));
  const lines = [...new Set(earlier.charges.map((charge) => charge.invoiceId))].flatMap((invoiceId) => earlier.couponLines.get(invoiceId) ?? []);
  const onContract: ContractCoupon[] = coupons.map((row) => ({
    id: row.id,
    couponId: row.coupon_id,
    periodsUsed: row.periods_used,
    coupon: { code: row.coupon.code, percentOff: row.coupon.percent_off, amountOff: row.coupon.amount_off, currency: row.coupon.currency, duration: row.coupon.duration, durationPeriods: row.coupon.duration_periods },
    discounted: lines
      .filter((line) => line.coupon_id === row.coupon_id && line.from_date !== null && line.to_date !== null)
      .map((line) => ({ planItemId: line.plan_item_id, fromDate: calendarDay(line.from_date!), toDate: calendarDay(line.to_date!) })),
  }));
  const { lines: made, served } = couponDiscounts(invoices, onContract, billedPeriods);
  for (const { invoiceIndex, ...line } of made) invoices[invoiceIndex]!.items.push(line);
  return served;
}

const lineAmount = (line: Line, currency: string) => roundToMinor(toDecimal(line.quantity).times(line.price), currency);

/** A planned line as the raise will price it. */
const pricedLine = (line: Line): PricedLine => ({ quantity: line.quantity, price: line.price, plan_item_id: line.planItemId ?? null, from_date: line.fromDate, to_date: line.toDate, coupon_id: line.couponId ?? null });

/** The sum of the contract's tax rates (percent) that apply to a line of the plan item whose first day is `day`. */
function taxRateOf(taxes: readonly ContractTax[], planItemId: string | undefined, day: string | null): Decimal {
  return taxesInForce(taxes, day)
    .filter((tax) => tax.appliesTo === 'all' || (planItemId !== undefined && tax.appliesTo.includes(planItemId)))
    .reduce((sum, tax) => sum.plus(tax.rate), new Decimal(0));
}

/**
 * The contract's plan changes still to settle are credited by the first invoices a run makes for it: each
 * change's credits (the old plan's in-advance fees for the days from the change on) become lines on the
 * invoice of the plan that took over, else of the plan it replaced, else the contract's first. A line
 * never takes the invoice below zero, taxes included (the contract's taxes apply to a credit line as to
 * its plan item): what does not fit goes to the customer's credit balance, with those taxes on it too.
 * A run after the contract's last day that makes no invoice for it (`billing`: the run's date, the
 * contract's currency and end) puts each change in force by that date whole on the balance.
 */
function creditPlanChanges(invoices: PlannedInvoice[], changes: PlanChangeRow[], taxes: readonly ContractTax[], billing: { date: string; currency: string; endDate: string | null }): CreditedChange[] {
  // A line is taxed by the versions in force on its first day: a credit of days charged earlier, as they were.
  const withTax = (amount: Decimal | string, planItemId: string | undefined, day: string | null) => toDecimal(amount).times(taxRateOf(taxes, planItemId, day).plus(100)).dividedBy(100);
  if (invoices.length === 0) {
    // Nothing to put the lines on. While the contract runs, the next invoice will carry them (a new plan
    // billed in arrears has its first invoice at its period's end). Once it has ended (terminated before
    // the change took effect, say) no invoice may ever come: a change in force is owed now, so the whole
    // of it goes to the balance, taxes included.
    if (billing.endDate === null || billing.endDate >= billing.date) return [];
    return changes
      .filter((change) => calendarDay(change.effective_date) <= billing.date)
      .map((change) => {
        const owed = change.credits.reduce((sum, credit) => sum.plus(roundToMinor(withTax(credit.amount, credit.planItemId, credit.from), billing.currency)), new Decimal(0));
        return { id: change.id, invoiceIndex: null, currency: billing.currency, toBalance: owed.isZero() ? null : formatAmount(owed, billing.currency) };
      });
  }
  return changes.map((change) => {
    const candidates = [change.to_contract_plan_id, change.from_contract_plan_id].map((id) => invoices.findIndex((invoice) => invoice.contractPlanId === id));
    const invoiceIndex = candidates.find((index) => index >= 0) ?? 0;
    const invoice = invoices[invoiceIndex]!;
    const minor = new Decimal(10).pow(-currencyMinorUnits(invoice.currency));
    // The invoice's total as its raise will compute it (`priceInvoice`, its coupon lines shared over the tax
    // versions of their lines), before the taxes' rounding, less a minor unit per tax line for it.
    const priced = priceInvoice(
      invoice.items.map((line) => ({ quantity: line.quantity, price: line.price, plan_item_id: line.planItemId ?? null, from_date: line.fromDate, to_date: line.toDate, coupon_id: line.couponId ?? null })),
      taxes,
      invoice.currency,
    );
    let room = priced.taxes.reduce((sum, tax) => sum.plus(tax.base.times(tax.rate).dividedBy(100)), priced.subtotal).minus(minor.times(priced.taxes.length));
    let toBalance = new Decimal(0);
    for (const credit of change.credits) {
      const fits = Decimal.max(0, room).times(100).dividedBy(taxRateOf(taxes, credit.planItemId, credit.from).plus(100)).toDecimalPlaces(currencyMinorUnits(invoice.currency), Decimal.ROUND_DOWN);
      const onInvoice = Decimal.min(fits, credit.amount);
      room = room.minus(withTax(onInvoice, credit.planItemId, credit.from));
      const rest = toDecimal(credit.amount).minus(onInvoice);
      if (rest.greaterThan(0)) toBalance = toBalance.plus(roundToMinor(withTax(rest, credit.planItemId, credit.from), invoice.currency));
      if (onInvoice.isZero()) continue;
      invoice.items.push({
        planItemId: credit.planItemId,
        title: `Unused ${credit.title}`,
        description: `${credit.from} to ${credit.to} (${credit.days} of ${credit.periodDays} days): plan changed from ${calendarDay(change.effective_date)}`,
        quantity: '1',
        price: onInvoice.negated().toFixed(),
        fromDate: credit.from,
        toDate: credit.to,
        planChangeId: change.id,
      });
    }
    return { id: change.id, invoiceIndex, currency: invoice.currency, toBalance: toBalance.isZero() ? null : formatAmount(toBalance, invoice.currency) };
  });
}

/**
 * `withoutInvoiceId`: plan as if that invoice had charged nothing (a draft recomputed); `pricesOnly`: the
 * priced lines alone, without coupons and plan-change credits.
 */
interface PlanOptions {
  withoutInvoiceId?: string;
  pricesOnly?: boolean;
  /** Contracts still drafts too (a draft invoice made by hand for one). */
  anyStatus?: boolean;
  /**
   * A run a schedule started: the instant it started. A usage window that had not ended by then where the
   * organisation is (a schedule in a zone ahead of the organisation's) is left to the next run, never billed
   * with part of its usage.
   */
  asOf?: Date;
}

/** A failure no retry can mend (a meter gone, a price that cannot be priced): the contract fails alone. */
function businessFailure(error: unknown): AppError | undefined {
  if (error instanceof AppError) return error.kind === 'unavailable' || error.kind === 'internal' ? undefined : error;
  // Pricing and currencies refuse what cannot be priced.
  if (error instanceof DomainError) return AppError.validation(error.message);
  return deterministicDatabaseError(error);
}

const failedOutcome = (failure: AppError): ContractOutcome => ({
  status: 'failed',
  code: String(failure.items[0]?.code ?? failure.kind),
  error: failure.items.map((item) => item.message).join('; ') || failure.message,
});

/**
 * The steps of an invoice run: record it, list what it bills, bill a page of contracts at a time. A page
 * is planned with one read of each kind (contracts, plans, suspensions, entities, the charge ledger, one
 * usage aggregation per meter for every window) and written in one transaction under its contracts' row locks,
 * with multi-row inserts. Every day and usage window it charges is recorded in the charge ledger, which
 * the next plan reads, so reruns, concurrent runs and retried activities bill nothing twice.
 */
export function createInvoiceRunService(db: Knex, paging: InvoiceRunPaging) {
  /**
   * What each contract plan of each contract owes on the billing date, priced; nothing is stored. A
   * contract that cannot be planned (a meter deleted, a price that cannot be priced) fails alone; one
   * that is not the organisation's is not found.
   */
  async function planContracts(trx: Knex, organisationId: string, contractIds: string[], billingDate: string, options: PlanOptions = {}): Promise<Map<string, Planned>> {
    // Every contract asked for has its answer, in the order asked.
    const planned = new Map<string, Planned>(contractIds.map((id) => [id, { customerId: '', invoices: [] }]));
    const found = await contractsIn(trx).findMany(organisationId, contractIds);
    const known = new Set(found.map((contract) => contract.id));
    for (const id of contractIds) if (!known.has(id)) planned.set(id, { failure: AppError.notFound('Contract') });
    const contracts = found.filter((contract) => {
      if (contract.status !== 'draft' || options.anyStatus) return true;
      planned.set(contract.id, { customerId: contract.customerId, invoices: [] });
      return false;
    });
    if (contracts.length === 0) return planned;

    const context = await ratingContextOf(trx, organisationId, contracts, { withoutInvoiceId: options.withoutInvoiceId });
    const { settings } = context;

    // Fees are priced now; usage lines wait for one aggregation per meter and window, for the whole page.
    const invoicesOf = new Map<string, PlannedInvoice[]>();
    const slotsOf = new Map<PlannedInvoice, Slot[]>();
    const pending: PendingUsage[] = [];
    for (const contract of contracts) {
      try {
        const invoices: PlannedInvoice[] = [];
        for (const contractPlan of contract.plans) {
          const rated = ratedContractPlan(context, contract, contractPlan);
          if (!rated) continue;
          const { terms, ledger, entityIds } = rated;
          const slots: Slot[] = feesDue(terms, ledger, billingDate);
          for (const window of usageWindows(terms, billingDate)) {
            if (options.asOf && startOfDayIn(addDays(window.to, 1), settings.timezone) > options.asOf) continue;
            pending.push({ contractId: contract.id, contractPlanId: contractPlan.id, entityIds, terms, ledger, window, slots, index: slots.length });
            slots.push(null);
          }
          if (slots.length === 0) continue;
          // Lines, dates and total are set once the usage lines are rated.
          const invoice: PlannedInvoice = { contractPlanId: contractPlan.id, currency: contract.currency, fromDate: '', toDate: '', total: '', items: [], charges: [] };
          slotsOf.set(invoice, slots);
          invoices.push(invoice);
        }
        invoicesOf.set(contract.id, invoices);
      } catch (error) {
        const failure = businessFailure(error);
        if (!failure) throw error;
        planned.set(contract.id, { failure });
      }
    }

    const couponsOf = groupBy(
      await couponsIn(trx).onContracts(
        organisationId,
        contracts.map((contract) => contract.id),
      ),
      (row) => row.contract_id,
      (row) => row,
    );
    // Plan changes to settle are rare: their contracts' taxes are read for them alone.
    const changesOf = groupBy(await planChangesIn(trx).pendingOf(contracts.map((contract) => contract.id)), (row) => row.contract_id, (row) => row);
    // Their taxes: what plan changes credit is taxed, and every invoice must fit its columns once taxed.
    const taxesOf = await contractTaxesOfMany(trx, contracts.map((contract) => contract.id));
    const failing = new Map<string, AppError>();
    const customerOf = new Map(contracts.map((contract) => [contract.id, contract.customerId]));
    const termsOf = new Map(contracts.map((contract) => [contract.id, { currency: contract.currency, endDate: contract.endDate }]));
    // Locked for share: a meter's filters and groupBy cannot change between the check that it is unbilled and these charges.
    const meters = new Map((await metersIn(trx).findMany(organisationId, [...new Set(pending.map((usage) => usage.window.meterId))], 'share')).map((meter) => [meter.id, meter]));
    // One aggregation per meter for the whole page: every window of every contract plan at once.
    const byMeter = new Map<string, PendingUsage[]>();
    for (const usage of pending) {
      if (!meters.has(usage.window.meterId)) failing.set(usage.contractId, AppError.conflict(`the meter of plan item ${usage.window.planItemId} no longer exists`));
      else push(byMeter, usage.window.meterId, usage);
    }
    for (const [meterId, usages] of byMeter) {
      // Each window's days in the organisation's time zone, so that a period and its usage cover the same instants.
      const instantsOf = (window: UsageWindow) => ({ from: startOfDayIn(window.from, settings.timezone), to: startOfDayIn(addDays(window.to, 1), settings.timezone) });
      // A contract plan reads a window once, however many of its items rate it.
      const groups = new Map(usages.map((usage) => [usageKey(usage), usage]));
      const members = [...groups].flatMap(([key, usage]) => usage.entityIds.map((customerEntityId) => ({ customerEntityId, key, ...instantsOf(usage.window) })));
      const meter = meters.get(meterId)!;
      const dimensional = (usage: PendingUsage) => hasDimensionalPrices(usage.terms.items.find((item) => item.id === usage.window.planItemId) ?? {});
      const query = { organisationId, metric: meter.metric, spec: specOf(meter) };
      const whole = new Set(usages.filter((usage) => !dimensional(usage)).map(usageKey));
      const values = new Map((await aggregateUsage(trx, { ...query, members: members.filter((member) => whole.has(member.key)) })).map((group) => [group.key, group.value]));
      // Items priced per dimension value read their windows split by every dimension of the meter.
      const split = new Set(usages.filter(dimensional).map(usageKey));
      const combinations = new Map<string, Combination[]>();
      for (const group of await aggregateUsage(trx, { ...query, members: members.filter((member) => split.has(member.key)), dimensions: meter.group_by })) {
        push(combinations, group.key, { values: Object.fromEntries(meter.group_by.map((key, index) => [key, group.dimensions[index] ?? null])), value: group.value });
      }
      for (const usage of usages) {
        try {
          usage.slots[usage.index] = dimensional(usage)
            ? rateDimensionalUsage(usage.terms, usage.window, { groupBy: meter.group_by, aggregation: meter.aggregation, combinations: combinations.get(usageKey(usage)) ?? [] }, usage.ledger)
            : rateUsage(usage.terms, usage.window, toDecimal(values.get(usageKey(usage)) ?? 0), usage.ledger);
        } catch (error) {
          const failure = businessFailure(error);
          if (!failure) throw error;
          failing.set(usage.contractId, failure);
        }
      }
    }
    for (const [contractId, invoices] of invoicesOf) {
      const kept = invoices.filter((invoice) => {
        for (const slot of slotsOf.get(invoice)!) {
          for (const rated of slot === null ? [] : Array.isArray(slot) ? slot : [slot]) {
            invoice.items.push(rated.line);
            invoice.charges.push(rated.charges);
          }
        }
        return invoice.items.length > 0;
      });
      invoicesOf.set(contractId, kept);
    }

    // An invoice in another currency than the organisation's is raised at the rate effective on its
    // date: a contract whose currency has none fails now, alone, rather than leave a draft that cannot be raised.
    const invoiced = [...invoicesOf].filter(([, invoices]) => invoices.length > 0).map(([contractId, invoices]) => ({ contractId, currency: invoices[0]!.currency }));
    if (invoiced.length > 0) {
      const base = settings.base_currency;
      const missing = new Set<string>();
      for (const currency of new Set(invoiced.map((entry) => entry.currency))) {
        if (currency !== base && !(await findEffectiveRate(trx, organisationId, currency, base, billingDate))) missing.add(currency);
      }
      for (const { contractId, currency } of invoiced) {
        if (missing.has(currency) && !failing.has(contractId)) failing.set(contractId, AppError.missingFxRate(currency, base, billingDate));
      }
    }

    const contractPlansOf = new Map(contracts.map((contract) => [contract.id, contract.plans.map((plan) => plan.id)]));
    for (const [contractId, invoices] of invoicesOf) {
      const failure = failing.get(contractId);
      if (failure) {
        planned.set(contractId, { failure });
        continue;
      }
      for (const invoice of invoices) {
        invoice.fromDate = earliest(invoice.items.map((line) => line.fromDate));
        invoice.toDate = latest(invoice.items.map((line) => line.toDate));
      }
      const served = invoices.length > 0 && !options.pricesOnly ? applyCoupons(invoices, couponsOf.get(contractId) ?? [], {
              charges: contractPlansOf
                .get(contractId)!
                .flatMap((contractPlanId) => context.ledgers.get(contractPlanId) ?? [])
                .filter((charge) => !context.progressive.has(charge.invoiceId)),
              couponLines: context.couponLines,
            }) : [];
      const planChanges = options.pricesOnly ? [] : creditPlanChanges(invoices, changesOf.get(contractId) ?? [], taxesOf.get(contractId) ?? [], { date: billingDate, ...termsOf.get(contractId)! });
      // As the raise will: each line rounded, then added up.
      for (const invoice of invoices) invoice.total = formatAmount(sumAmounts(invoice.items.map((line) => lineAmount(line, invoice.currency))), invoice.currency);
      // A line its column cannot hold, or a draft its raise would refuse, is not made: the contract fails alone.
      const unstorable = invoices.flatMap((invoice) => invoice.items.map(itemColumnProblem)).find((problem) => problem !== undefined);
      const overflow = unstorable ? null : invoices.map((invoice) => invoiceOverflow(invoice.items.map(pricedLine), taxesOf.get(contractId) ?? [], invoice.currency)).find((problem) => problem !== null);
      if (unstorable) planned.set(contractId, { failure: AppError.validation(unstorable) });
      else if (overflow) planned.set(contractId, { failure: AppError.conflict(overflow) });
      else planned.set(contractId, { customerId: customerOf.get(contractId)!, invoices, coupons: served, planChanges });
    }
    return planned;
  }

  /**
   * Bills the contracts together, in one transaction under their row locks: a draft invoice per contract
   * plan with something due, its periods claimed, and every contract's outcome, all committed at once.
   */
  async function billTogether(input: Omit<BillContractsInput, 'range' | 'contractIds'>, contractIds: string[], run: Pick<InvoiceRunRow, 'customer_reference' | 'purchase_order_number'>, asOf: Date | undefined): Promise<Map<string, ContractOutcome>> {
    return db.transaction(async (trx) => {
      // Runs that meet on a contract take turns; the second sees what the first claimed.
      await contractsIn(trx).lockMany(input.organisationId, contractIds);
      const planned = await planContracts(trx, input.organisationId, contractIds, input.billingDate, { asOf });
      const outcomes = new Map<string, ContractOutcome>();
      const drafts: Array<{ contractId: string; customerId: string; invoice: PlannedInvoice; made: RunInvoice[] }> = [];
      const served: Array<{ id: string; periods: number }> = [];
      const changes: Array<CreditedChange & { customerId: string; draftIndex: number | null }> = [];
      for (const [contractId, plan] of planned) {
        if ('failure' in plan) {
          outcomes.set(contractId, failedOutcome(plan.failure));
        } else if (input.dryRun) {
          const invoices = plan.invoices.map((invoice) => ({ invoiceId: null, contractPlanId: invoice.contractPlanId, currency: invoice.currency, total: invoice.total, items: invoice.items }));
          outcomes.set(contractId, { status: 'billed', invoices });
        } else {
          const made: RunInvoice[] = [];
          outcomes.set(contractId, { status: 'billed', invoices: made });
          for (const change of plan.planChanges ?? []) {
            changes.push({ ...change, customerId: plan.customerId, draftIndex: change.invoiceIndex === null ? null : drafts.length + change.invoiceIndex });
          }
          for (const invoice of plan.invoices) drafts.push({ contractId, customerId: plan.customerId, invoice, made });
          served.push(...(plan.coupons ?? []));
        }
      }
      const invoiceIds = await invoicesIn(trx).createMany(
        drafts.map(({ contractId, customerId, invoice }) => ({
          organisationId: input.organisationId,
          customerId,
          contractId,
          contractPlanId: invoice.contractPlanId,
          currency: invoice.currency,
          date: input.billingDate,
          fromDate: invoice.fromDate,
          toDate: invoice.toDate,
          invoiceRunId: input.runId,
          customerReference: run.customer_reference,
          purchaseOrderNumber: run.purchase_order_number,
          items: invoice.items,
        })),
      );
      drafts.forEach(({ invoice, made }, index) => made.push({ invoiceId: invoiceIds[index]!, contractPlanId: invoice.contractPlanId, currency: invoice.currency, total: invoice.total }));
      const charges = drafts.flatMap(({ contractId, invoice }, index) =>
        shareDiscounts(invoice.charges.flat(), discountLinesOf(invoice.items), invoice.currency).map((charge) => ({ ...charge, contractId, contractPlanId: invoice.contractPlanId, invoiceId: invoiceIds[index]! })),
      );
      const recorded = await chargesIn(trx).record(input.organisationId, input.runId, charges);
      // Under the contracts' locks nobody else can have charged them: a mismatch is a bug, and rolls back.
      if (recorded !== charges.length) throw new InvariantError(`${charges.length - recorded} of the page's charges were made meanwhile`);
      await createInvoiceRunRepository(trx).recordOutcomes(input.organisationId, input.runId, [...outcomes].map(([contractId, outcome]) => ({ contractId, outcome })));
      // Each coupon that discounted the contract's invoices has served one more period.
      await couponsIn(trx).countPeriods(served);
      // The plan changes those invoices credit are settled; what did not fit on them is the customer's credit.
      const invoiceOf = (change: (typeof changes)[number]) => (change.draftIndex === null ? null : invoiceIds[change.draftIndex]!);
      await planChangesIn(trx).settle(changes.map((change) => ({ id: change.id, invoiceId: invoiceOf(change), toBalance: change.toBalance })));
      // In one order of balances, so that two pages crediting the same customers never wait on each other crosswise.
      const byBalance = (change: (typeof changes)[number]) => `${change.customerId}\u0000${change.currency}`;
      for (const change of [...changes].sort((a, b) => (byBalance(a) < byBalance(b) ? -1 : byBalance(a) > byBalance(b) ? 1 : 0))) {
        if (change.toBalance === null) continue;
        await creditsIn(trx).append({
          organisationId: input.organisationId,
          customerId: change.customerId,
          currency: change.currency,
          kind: 'adjustment',
          amount: change.toBalance,
          reason: invoiceOf(change) ? `plan change ${change.id}: unused fees beyond invoice ${invoiceOf(change)}` : `plan change ${change.id}: unused fees, with no invoice of the contract to put them on`,
          invoiceId: invoiceOf(change),
        });
      }
      return outcomes;
    });
  }

  /** A page's contracts: the billable ones in its range, among those the run names if it names any. */
  async function pageContracts(input: BillContractsInput, run: InvoiceRunRow): Promise<string[]> {
    return contractsIn(db).billableIds(input.organisationId, input.billingDate, run.contract_ids ?? undefined, input.range);
  }

  return {
    /** What a run on the billing date would create for the contract; nothing is stored. */
    async plan(organisationId: string, contractId: string, billingDate: string): Promise<PlannedInvoice[]> {
      const plan = (await planContracts(db, organisationId, [contractId], billingDate)).get(contractId)!;
      if ('failure' in plan) throw plan.failure;
      return plan.invoices;
    },

    /**
     * A draft's priced lines recomputed for its contract plan on its date, as if it had charged nothing:
     * what is due then within the draft's days (`span`, where it has them) and no other document charged.
     * Inside the caller's transaction, which holds the contract's row lock.
     */
    async repriceDraft(trx: Knex, draft: DraftToReprice): Promise<{ items: Line[]; charges: Charge[] }> {
      const plan = (await planContracts(trx, draft.organisationId, [draft.contractId], draft.date, { withoutInvoiceId: draft.invoiceId, pricesOnly: true, anyStatus: true })).get(draft.contractId)!;
      if ('failure' in plan) throw plan.failure;
      const invoice = plan.invoices.find((candidate) => candidate.contractPlanId === draft.contractPlanId);
      const within = (line: Line) => !draft.span || (line.fromDate >= draft.span.from && line.toDate <= draft.span.to);
      const kept = (invoice?.items ?? []).map((line, index) => ({ line, charges: invoice!.charges[index] ?? [] })).filter(({ line }) => within(line));
      return { items: kept.map(({ line }) => line), charges: kept.flatMap(({ charges }) => charges) };
    },

    /**
     * Records the run (once per workflow) and lists the contracts it bills: those asked, else every one
     * started by the billing date, with the worker's paging (kept in the workflow's history, so a replay
     * pages as the run did).
     */
    async begin(input: BeginRunInput): Promise<{ runId: string; pages: PageRange[] } & InvoiceRunPaging> {
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
      const contractIds = await contractsIn(db).billableIds(input.organisationId, input.billingDate, input.contractIds);
      if (!input.contractIds || run.contracts_total === 0) await runs.setTotal(run.id, contractIds.length);
      // The history keeps each page's first and last id, not the contracts: its size does not grow with the run.
      const pages: PageRange[] = [];
      for (let i = 0; i < contractIds.length; i += paging.pageSize) {
        pages.push({ from: contractIds[i]!, to: contractIds[Math.min(i + paging.pageSize, contractIds.length) - 1]! });
      }
      return { runId: run.id, pages, ...paging };
    },

    /**
     * Bills a page of contracts: all together in one transaction; if that fails for a reason no retry
     * mends (a value Postgres refuses for one contract), each alone, so that the one contract fails by
     * itself, with its reason recorded. Contracts this run already billed are skipped, so a retried
     * activity bills nothing twice.
     */
    async billContracts(input: BillContractsInput): Promise<{ billed: number; failed: number }> {
      const run = orNotFound(await createInvoiceRunRepository(db).find(input.organisationId, input.runId), 'Invoice run');
      const contractIds = input.contractIds ?? (await pageContracts(input, run));
      // A scheduled run bills usage as it stood when the run began (the run's row is written as it begins).
      const asOf = run.schedule_id ? run.started_at : undefined;
      const recorded = await createInvoiceRunRepository(db).outcomeStatuses(input.runId, contractIds);
      const todo = contractIds.filter((contractId) => recorded.get(contractId) !== 'billed');
      const outcomes = new Map<string, ContractOutcome>();
      try {
        if (todo.length > 0) for (const [contractId, outcome] of await billTogether(input, todo, run, asOf)) outcomes.set(contractId, outcome);
      } catch (error) {
        if (!businessFailure(error)) throw error;
        for (const contractId of todo) {
          try {
            for (const [id, outcome] of await billTogether(input, [contractId], run, asOf)) outcomes.set(id, outcome);
          } catch (alone) {
            const failure = businessFailure(alone);
            if (!failure) throw alone;
            const outcome = failedOutcome(failure);
            await createInvoiceRunRepository(db).recordOutcomes(input.organisationId, input.runId, [{ contractId, outcome }]);
            outcomes.set(contractId, outcome);
          }
        }
      }
      const failed = [...outcomes.values()].filter((outcome) => outcome.status === 'failed').length;
      return { billed: contractIds.length - failed, failed };
    },

    /** Whether the workflow has recorded its run already (a retried first step finds it). */
    async recorded(workflowId: string): Promise<boolean> {
      return (await createInvoiceRunRepository(db).findByWorkflow(workflowId)) !== undefined;
    },

    /** The invoices the run made, in the order of their contracts. */
    async invoiceIdsOf(runId: string): Promise<string[]> {
      return createInvoiceRunRepository(db).invoiceIds(runId);
    },

    /** The run's end, with its webhook event (`invoice_run.completed` or `.failed`) in the same transaction. */
    async finish(input: { runId: string; failed?: boolean }): Promise<void> {
      await db.transaction(async (trx) => {
        const runs = createInvoiceRunRepository(trx);
        const status = input.failed ? 'failed' : 'completed';
        if (!(await runs.finish(input.runId, status))) return;
        const row = (await runs.findById(input.runId))!;
        // The run as GET /invoice-runs/{id} answers it (its failures included), without its invoice list.
        const run = await finishedRun(runs, row);
        await recordEvent(trx, row.organisation_id, domainEvent(`invoice_run.${status}`, { ...run, status }));
      });
    },
  };
}

export type InvoiceRunService = ReturnType<typeof createInvoiceRunService>;
