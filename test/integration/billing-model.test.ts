import { randomUUID } from 'node:crypto';
import DecimalJs from 'decimal.js';
import fc from 'fast-check';
import type { Knex } from 'knex';
import { calendarDay } from '../../src/db/dates';
import { newId } from '../../src/db/ids';
import { createDb } from '../../src/db/knex';
import { AppError } from '../../src/domain/errors';
import { createAccessTokens } from '../../src/modules/auth/access-tokens';
import { createPlanBody, planItemInput, updatePlanBody } from '../../src/modules/billing-plans/billing-plans.schemas';
import { createChargeRepository, type ChargeRow } from '../../src/modules/charges/charges.repository';
import { createContractRepository } from '../../src/modules/contracts/contracts.repository';
import { taxBody } from '../../src/modules/contracts/contracts.schemas';
import { createPlanChangeLifecycleService } from '../../src/modules/lifecycles/plan-change-lifecycle.service';
import { createPlanChangeRepository, toPlanChange } from '../../src/modules/contracts/plan-changes.repository';
import { createCouponBody } from '../../src/modules/coupons/coupons.schemas';
import { createCreditNoteBody } from '../../src/modules/credit-notes/credit-notes.schemas';
import { createCustomerBody } from '../../src/modules/customers/customers.schemas';
import { createEntityBody } from '../../src/modules/customers/entities.schemas';
import { createFxRateBody } from '../../src/modules/fx-rates/fx-rates.schemas';
import { createInvoiceRunRepository } from '../../src/modules/invoice-runs/invoice-runs.repository';
import { createInvoiceRepository, type Invoice } from '../../src/modules/invoices/invoices.repository';
import { createApiServices, serviceDepsFrom, type ApiServices } from '../../src/services';
import { createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { storeUsageEvent } from './support/stored-usage';
import { shrinkWithin } from '../support/properties';

/**
 * A model-based property test of billing through the services themselves, over Postgres: random histories
 * of invoice runs on dates that move forward, plan items added and removed, billing-period changes, end
 * dates moved, suspensions, late usage, `sync-items`, coupons applied, removed and applied again, credit
 * notes by quantity and by amount, and plan changes to a second
 * plan (another fee, another meter price, maybe another billing period) and back, and their undo, in
 * currencies of 0, 2 and 3 decimals, with 0 to 3 contract taxes (on every item, or on one plan item). After
 * each step that writes charges, and after a last run far past the contract's end, the charge ledger and the
 * invoices are read back from Postgres and checked against a day-by-day oracle that computes periods (those
 * of a contract plan that starts with a change anchored on its first day), days in force and amounts by
 * itself (docs/billing-runs.md, "How a charge is computed"; docs/adjustments.md; the pure counterpart is
 * test/unit/rating.test.ts):
 * - every day of every plan item of each contract plan is charged once when due, at the terms in force;
 *   every usage unit once, by the item of the plan that served its day;
 * - a plan change ends the old contract plan the day before it and starts the new one on it; the old plan's
 *   in-advance fee days from the change on that were charged are given back by the contract's next invoice
 *   (lines naming the change, the rest with its taxes to the credit balance): the telescoping share of those
 *   days, times the share paid after coupons, at most what credit notes left of the line; no such day stays
 *   charged without its credit; undo puts the old plan back, its days charged once as before;
 * - a change or an undo is refused exactly when the rules say (a date not after the plan's start or after
 *   the end, usage invoiced, fees given up on a draft; an undo after a run settled the change, or of a change
 *   not the latest), with the answer's text;
 * - a raised invoice has each tax at its rate on the rounded lines it applies to, rounded half-up once per
 *   tax line, and its total is its rounded lines and taxes; a credit note's tax is its line's own taxes;
 * - no credit note credits a line more than it was paid, nor the invoice beyond what is left of its total;
 *   a note by amount is that amount, lines and tax;
 * - a coupon serves no more periods than it grants, on the contract, whatever removals and re-applications
 *   came between; removed, it serves none.
 *
 * Runs call the invoice-run service's steps (begin, billContracts, finish) as the run workflow's activities
 * do, without the workflow; plan and contract edits, taxes, coupons and `sync-items` go through their
 * services, with the zod schemas of their routes. Plan changes and their undo call the step the contract
 * workflow's activity calls (the plan-change lifecycle service). Suspensions are written with the contract
 * repository, as the contract lifecycle's step does, on the model's dates rather than today. Raising an
 * invoice and issuing a credit note are workflow Updates: they go through the suite's Temporal server and
 * worker.
 *
 * Histories that found faults in the services are kept, written out, as cases of their own (FOUND, below).
 *
 * BILLING_MODEL_RUNS sets the number of histories: 350 under CI (about 1.5 minutes alone on two cores, three
 * to four beside the rest of the suite), 50 otherwise (about 20 seconds). To replay a failure: BILLING_MODEL_SEED and
 * BILLING_MODEL_PATH as fast-check printed them, or BILLING_MODEL_EXAMPLE set to the printed counterexample
 * (the JSON array). BILLING_MODEL_STATS=1 prints how often each kind of step and outcome happened.
 */

// ---- calendar days as numbers, through Date.UTC, independent of the services' arithmetic

const DAY_MS = 86_400_000;
const dayOf = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / DAY_MS;
const isoOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
const MINOR: Record<Currency, number> = { JPY: 0, USD: 2, KWD: 3 };
const MONTHS = { monthly: 1, quarterly: 3, yearly: 12 } as const;
const monthLength = (year: number, month0: number) => new Date(Date.UTC(year, month0 + 1, 0)).getUTCDate();
const utcDay = (year: number, month0: number, date: number) => Date.UTC(year, month0, date) / DAY_MS;
const showDay = (day: number) => (Number.isFinite(day) ? isoOf(day) : 'nothing');

type Currency = 'JPY' | 'USD' | 'KWD';
type Recurring = keyof typeof MONTHS;
type Anchor = 'calendar' | 'anniversary';

// ---- money in minor units (bigint), computed here from decimal strings

const scale = (minor: number) => new DecimalJs(10).pow(minor);
const toMinor = (amount: string, minor: number) => BigInt(new DecimalJs(amount).times(scale(minor)).toFixed(0, DecimalJs.ROUND_HALF_UP));
const isExactMinor = (amount: string, minor: number) => new DecimalJs(amount).times(scale(minor)).isInteger();
const fromMinor = (units: bigint, minor: number) => new DecimalJs(units.toString()).dividedBy(scale(minor)).toFixed(minor);
/** An exact decimal, half-up to the minor unit, in minor units. */
const roundedMinor = (amount: DecimalJs, minor: number) => BigInt(amount.times(scale(minor)).toDecimalPlaces(0, DecimalJs.ROUND_HALF_UP).toFixed(0));
/** `quantity × price`, half-up to the minor unit: a line's amount. */
const lineMinor = (quantity: string, price: string, minor: number) => roundedMinor(new DecimalJs(quantity).times(price), minor);
/** n / d half-up, for n ≥ 0 and d > 0. */
const divHalfUp = (n: bigint, d: bigint) => (2n * n + d) / (2n * d);
const sumMinor = (values: readonly bigint[]) => values.reduce((sum, value) => sum + value, 0n);

// ---- the model: what the test did, with an oracle over it

type PlanKey = 'A' | 'B';
type Version = { from: number | null; kind: Recurring };

interface ModelItem {
  id: string;
  name: string;
  /** The plan it belongs to: the contract's first plan (A) or the one plan changes move to and fro (B). */
  plan: PlanKey;
  metered: boolean;
  arrears: boolean;
  /** A fee: its whole period's price, in minor units (its quantity × its unit price, rounded). */
  fee: bigint;
  /** A metered item: per unit, or graduated (`unitPrice` up to `upTo` units, `over` after). */
  pricing: 'flat' | 'per_unit' | 'graduated';
  unitPrice: string;
  upTo: number;
  over: string;
  from: number | null;
  to: number | null;
  /** Removed before it was ever in force or charged: gone from the plan. */
  deleted?: boolean;
}

interface ModelCoupon {
  id: string;
  code: string;
  percentOff: string | null;
  /** In minor units of the contract's currency. */
  amountOff: bigint | null;
  periods: number;
  used: number;
  /** Removed from the contract (and not applied again): it serves nothing meanwhile. */
  removed?: boolean;
}

/** A contract plan: a plan of the contract from its first day, through the day before a standing change from it (`cut`). */
interface ModelContractPlan {
  id: string;
  plan: PlanKey;
  start: number;
  cut: number | null;
}

/** What a change gives back of one fee line the old contract plan billed for days from the change on. */
interface ModelCredit {
  invoiceId: string;
  invoiceItemId: string;
  planItemId: string;
  from: number;
  to: number;
  amount: bigint;
}

/** What a change settled whole to the credit balance is settled by: no invoice. */
const TO_BALANCE = 'the credit balance';

/** A plan change that stands (undone ones are forgotten): from a contract plan to a new one from `day`. */
interface ModelChange {
  id: string;
  from: ModelContractPlan;
  to: ModelContractPlan;
  day: number;
  /** The invoice that credited it, or TO_BALANCE; null while pending. */
  settledBy: string | null;
  /** Per fee line with days given up, including those that give back nothing. */
  credits: ModelCredit[];
}

interface ModelTax {
  name: string;
  rate: string;
  appliesTo: 'all' | string[];
}

interface Model {
  currency: Currency;
  minor: number;
  anchor: Anchor;
  start: number;
  end: number | null;
  /** Each plan's billing-period versions. */
  versions: Record<PlanKey, Version[]>;
  items: ModelItem[];
  contractPlans: ModelContractPlan[];
  changes: ModelChange[];
  taxes: ModelTax[];
  suspensions: Array<{ from: number; to: number | null }>;
  events: Array<{ day: number; units: number }>;
  coupons: ModelCoupon[];
  /** Net credited so far per invoice item, by the credit notes issued. */
  credited: Map<string, bigint>;
  clock: number;
}

/** What a metered item rates `units` at, in minor units. */
function rated(item: ModelItem, units: DecimalJs, minor: number): bigint {
  if (item.pricing === 'graduated') {
    const first = DecimalJs.min(units, item.upTo);
    const rest = DecimalJs.max(units.minus(item.upTo), 0);
    return roundedMinor(first.times(item.unitPrice).plus(rest.times(item.over)), minor);
  }
  return roundedMinor(units.times(item.unitPrice), minor);
}

/** Net credited of each invoice item by the changes that stand. */
const creditedByChanges = (model: Model) => {
  const byItem = new Map<string, bigint>();
  for (const credit of model.changes.flatMap((change) => change.credits)) byItem.set(credit.invoiceItemId, (byItem.get(credit.invoiceItemId) ?? 0n) + credit.amount);
  return byItem;
};

/**
 * What is left of an invoice's total to credit, as bounds: its total less its credit notes (gross) and less
 * what the standing plan changes credited of its lines, with those lines' own taxes (at least none, at most
 * each tax rounded up).
 */
function leftToCredit(model: Model, invoice: Invoice, notesGross: bigint): { low: bigint; high: bigint } {
  const byChanges = creditedByChanges(model);
  let net = 0n;
  let taxUpTo = 0n;
  for (const line of invoice.items) {
    const credited = byChanges.get(line.id) ?? 0n;
    if (credited <= 0n) continue;
    net += credited;
    for (const t of taxesOn(model, line.planItemId)) taxUpTo += BigInt(new DecimalJs(credited.toString()).times(t.rate).dividedBy(100).ceil().toFixed()) + 1n;
  }
  const total = toMinor(invoice.total ?? '0', model.minor) - notesGross;
  return { low: total - net - taxUpTo, high: total - net };
}

function oracle(model: Model) {
  const periods = new Map<string, [number, number]>();
  /**
   * The period of `kind` holding `day`: calendar months, quarters and years, or anniversaries of the
   * contract plan's first day (`anchorDay`) counted one by one.
   */
  const periodOf = (kind: Recurring, day: number, anchorDay: number): [number, number] => {
    const key = `${kind} ${day} ${model.anchor === 'calendar' ? '' : anchorDay}`;
    const known = periods.get(key);
    if (known) return known;
    const m = MONTHS[kind];
    let found: [number, number];
    const date = new Date(day * DAY_MS);
    if (model.anchor === 'calendar') {
      const first = Math.floor((date.getUTCFullYear() * 12 + date.getUTCMonth()) / m) * m;
      found = [utcDay(Math.floor(first / 12), first % 12, 1), utcDay(Math.floor((first + m) / 12), (first + m) % 12, 1) - 1];
    } else {
      const start = new Date(anchorDay * DAY_MS);
      // The k-th period starts on the anchor's day of the month, or the month's last day when it is shorter.
      const startOf = (k: number) => {
        const month = start.getUTCFullYear() * 12 + start.getUTCMonth() + k * m;
        const year = Math.floor(month / 12);
        return utcDay(year, month % 12, Math.min(start.getUTCDate(), monthLength(year, month % 12)));
      };
      let k = Math.floor((date.getUTCFullYear() * 12 + date.getUTCMonth() - start.getUTCFullYear() * 12 - start.getUTCMonth()) / m) - 1;
      while (startOf(k + 1) <= day) k += 1;
      while (startOf(k) > day) k -= 1;
      found = [startOf(k), startOf(k + 1) - 1];
    }
    periods.set(key, found);
    return found;
  };
  /** The billing-period version of `plan` in force on `day`, with its days. */
  const versionOn = (plan: PlanKey, day: number) => {
    const versions = model.versions[plan];
    let index = -1;
    versions.forEach((version, i) => {
      if (version.from === null || version.from <= day) index = i;
    });
    const next = versions[index + 1];
    return { kind: versions[index]!.kind, from: versions[index]!.from ?? -Infinity, to: next ? next.from! - 1 : Infinity };
  };
  const contractPlan = (id: string) => model.contractPlans.find((cp) => cp.id === id);
  /** A contract plan's last day: the day before a change from it, or the contract's end. */
  const lastOf = (cp: ModelContractPlan) => Math.min(cp.cut ?? Infinity, model.end ?? Infinity);
  const serves = (cp: ModelContractPlan, day: number) => day >= cp.start && day >= model.start && day <= lastOf(cp);
  /** The contract plan of `plan` that serves `day`, if any (those of one plan never share a day). */
  const servingOn = (plan: PlanKey, day: number) => model.contractPlans.find((cp) => cp.plan === plan && serves(cp, day));
  const periodOn = (cp: ModelContractPlan, day: number) => periodOf(versionOn(cp.plan, day).kind, day, cp.start);
  const itemOn = (item: ModelItem, day: number) => (item.from === null || item.from <= day) && (item.to === null || day <= item.to);
  const inForceOn = (cp: ModelContractPlan, item: ModelItem, day: number) => cp.plan === item.plan && serves(cp, day) && itemOn(item, day);
  const inForce = (item: ModelItem, day: number) => servingOn(item.plan, day) !== undefined && itemOn(item, day);
  /** The days of the period holding `day` that the version in force, the contract plan and the item serve. */
  const spanOf = (item: ModelItem, day: number, cp = servingOn(item.plan, day)): [number, number] => {
    if (!cp) return [Infinity, -Infinity];
    const [pf, pt] = periodOn(cp, day);
    const version = versionOn(cp.plan, day);
    return [Math.max(pf, version.from, model.start, cp.start, item.from ?? -Infinity), Math.min(pt, version.to, lastOf(cp), item.to ?? Infinity)];
  };
  const suspended = (day: number) => model.suspensions.some((s) => s.from <= day && (s.to === null || day <= s.to));
  /** On billing date `date`: a fee in advance once its span has begun, in arrears once it has ended; usage once its window has ended. */
  const due = (item: ModelItem, day: number, date: number, cp = servingOn(item.plan, day)) =>
    item.metered || item.arrears ? spanOf(item, day, cp)[1] < date : spanOf(item, day, cp)[0] <= date;
  return { periodOn, versionOn, contractPlan, serves, servingOn, inForceOn, inForce, spanOf, suspended, due };
}

// ---- random histories

/**
 * The steps of a history: `run` (an invoice run, its invoices maybe raised), `addItem` / `removeItem` (of
 * the first plan, from a day), `period` (the first plan's billing period from a day), `end` (the contract's
 * end moved, or opened), `suspend` / `resume`, `usage` (late too), `sync` (the latest draft), `coupon`,
 * `recoupon` (a coupon removed from the contract, applied again, or both), `raise` (the latest draft),
 * `credit` (a credit note of part of a line, or of part of what is left of an invoice), `change` (the contract plan that
 * serves now changed to the other plan from a day, the drafts maybe raised first) and `undo` (the latest
 * change that stands, or the one before it).
 */
type Step =
  | { kind: 'run'; advance: number; raise: boolean }
  | { kind: 'addItem'; offset: number; metered: boolean; fee: number; extraDecimals: number; quantity: string | null; arrears: boolean; graduated: boolean; upTo: number; price: string; over: string }
  | { kind: 'removeItem'; which: number; offset: number }
  | { kind: 'period'; to: Recurring; offset: number }
  | { kind: 'end'; offset: number | null }
  | { kind: 'suspend'; advance: number; days: number | null }
  | { kind: 'resume'; advance: number }
  | { kind: 'usage'; back: number; units: number }
  | { kind: 'sync' }
  | { kind: 'coupon'; percentOff: string | null; amountOff: number; duration: 'once' | 'repeating' | 'forever'; periods: number }
  | { kind: 'recoupon'; which: number; reapply: boolean }
  | { kind: 'raise' }
  | { kind: 'credit'; invoice: number; line: number; quarters: number; byAmount?: boolean }
  | { kind: 'change'; offset: number; raiseFirst: boolean }
  | { kind: 'undo'; earlier: boolean };

const unitPrice = fc.constantFrom('0.01', '0.5', '0.0333', '2', '7');

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('run' as const), advance: fc.integer({ min: 0, max: 75 }), raise: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('addItem' as const),
      offset: fc.integer({ min: -45, max: 45 }),
      metered: fc.boolean(),
      fee: fc.integer({ min: 1, max: 1_000_000 }),
      extraDecimals: fc.integer({ min: 0, max: 2 }),
      quantity: fc.constantFrom(null, '1', '3', '2.5', '0.75'),
      arrears: fc.boolean(),
      graduated: fc.boolean(),
      upTo: fc.constantFrom(10, 100, 1000),
      price: unitPrice,
      over: unitPrice,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('removeItem' as const), which: fc.nat(5), offset: fc.integer({ min: -60, max: 45 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('period' as const), to: fc.constantFrom<Recurring>('monthly', 'quarterly', 'yearly'), offset: fc.integer({ min: -60, max: 45 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('end' as const), offset: fc.option(fc.integer({ min: -90, max: 400 }), { freq: 4 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('suspend' as const), advance: fc.integer({ min: 0, max: 40 }), days: fc.option(fc.integer({ min: 1, max: 60 })) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resume' as const), advance: fc.integer({ min: 0, max: 40 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('usage' as const), back: fc.integer({ min: -20, max: 200 }), units: fc.integer({ min: 1, max: 5000 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'sync' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('coupon' as const),
      percentOff: fc.option(fc.constantFrom('10', '25', '50', '33.3333', '100'), { freq: 2 }),
      amountOff: fc.integer({ min: 1, max: 100_000 }),
      duration: fc.constantFrom('once' as const, 'repeating' as const, 'forever' as const),
      periods: fc.integer({ min: 1, max: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('recoupon' as const), which: fc.nat(5), reapply: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'raise' as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('credit' as const), invoice: fc.nat(20), line: fc.nat(20), quarters: fc.integer({ min: 1, max: 4 }), byAmount: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('change' as const), offset: fc.oneof(fc.integer({ min: 1, max: 28 }), fc.integer({ min: -30, max: 75 })), raiseFirst: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('undo' as const), earlier: fc.boolean() }) },
);

/** A contract tax: a percentage on every item, or on one plan item of the contract's first plan. */
const tax = fc.record({ rate: fc.constantFrom('0', '5', '7.5', '8.875', '19.6', '20', '25'), on: fc.constantFrom('all' as const, 'fee' as const, 'units' as const) });

const history = fc.record({
  currency: fc.constantFrom<Currency>('JPY', 'USD', 'KWD'),
  anchor: fc.constantFrom<Anchor>('calendar', 'anniversary'),
  kind: fc.constantFrom<Recurring>('monthly', 'quarterly', 'yearly'),
  start: fc.integer({ min: dayOf('2025-01-01'), max: dayOf('2027-12-31') }),
  end: fc.option(fc.integer({ min: 0, max: 500 }), { freq: 3 }),
  fee: fc.integer({ min: 1, max: 1_000_000 }),
  arrears: fc.boolean(),
  unitPrice,
  /** The second plan, which plan changes move to and back from. */
  other: fc.record({ kind: fc.constantFrom<Recurring>('monthly', 'quarterly', 'yearly'), fee: fc.integer({ min: 1, max: 1_000_000 }), arrears: fc.constantFrom(false, false, true), unitPrice }),
  taxes: fc.array(tax, { maxLength: 3 }),
  steps: fc.array(step, { minLength: 3, maxLength: 16 }),
});

type History = typeof history extends fc.Arbitrary<infer T> ? T : never;

// ---- the suite's database, services and organisation

let api: TestApi;
let tenant: Tenant;
let db: Knex;
let services: ApiServices;

/** How often each kind of step and outcome happened over the histories (BILLING_MODEL_STATS=1). */
const seen = new Map<string, number>();
const count = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'billing-model');
  db = createDb(process.env.DATABASE_URL!, 5);
  const accessTokens = createAccessTokens(api.config.JWT_SECRET!, api.config.ACCESS_TOKEN_TTL_SECONDS);
  services = createApiServices({ ...serviceDepsFrom(api.config, db), temporal: api.temporal, accessTokens });
  // Invoices in JPY and KWD are raised at a rate to the base currency (USD): runs refuse them without one.
  for (const currency of ['JPY', 'KWD']) {
    await services.fxRates.create(tenant.organisationId, createFxRateBody.parse({ fromCurrency: currency, toCurrency: 'USD', rate: '1', effectiveDate: '2000-01-01' }));
  }
});

afterAll(async () => {
  if (process.env.BILLING_MODEL_STATS) console.log([...seen].sort().map(([what, times]) => `${what}: ${times}`).join('\n'));
  await db?.destroy();
  await api?.close();
});

/** What a service call gave: its answer, or the AppError it threw (anything else is rethrown). */
async function outcomeOf<T>(call: () => Promise<T>): Promise<{ ok: T } | { error: AppError }> {
  try {
    return { ok: await call() };
  } catch (error) {
    if (error instanceof AppError) return { error };
    throw error;
  }
}

const describeOutcome = (outcome: { ok: unknown } | { error: AppError }) => ('ok' in outcome ? 'ok' : `${outcome.error.kind}: ${outcome.error.items.map((item) => item.message).join('; ')}`);
const kindOf = (outcome: { ok: unknown } | { error: AppError }) => ('ok' in outcome ? 'ok' : outcome.error.kind);

interface Contract {
  customerId: string;
  contractId: string;
  /** Every contract plan the contract had, those removed by an undo too: the ledger of the contract. */
  contractPlanIds: string[];
  planId: string;
  /** The second plan. */
  otherPlanId: string;
  entityId: string;
  meterId: string;
  metric: string;
}

/**
 * A customer with an entity, a meter, a plan of a fee and a metered item, an active contract on it, and its
 * taxes; and a second plan in the same currency, of a fee and a metered item on the same meter.
 */
async function setUp(h: History, model: Model): Promise<Contract> {
  const organisationId = tenant.organisationId;
  const tag = randomUUID().slice(0, 8);
  const customer = await services.customers.create(organisationId, createCustomerBody.parse({ name: `Model ${tag}`, currency: h.currency }));
  const entity = await services.entities.create(organisationId, createEntityBody.parse({ type: 'customer', name: `Entity ${tag}`, customerId: customer.id }));
  const metric = `units_${tag}`;
  const meter = await services.meters.create(organisationId, { name: `Units ${tag}`, metric, aggregation: 'sum' });
  const planOf = (name: string, kind: Recurring, fee: number, arrears: boolean, price: string) =>
    services.billingPlans.create(
      organisationId,
      createPlanBody.parse({
        name: `${name} ${tag}`,
        currency: h.currency,
        billingPeriod: kind,
        items: [
          { name: `${name} fee`, pricingModel: 'flat', unitPrice: fromMinor(BigInt(fee), model.minor), billingTiming: arrears ? 'in_arrears' : 'in_advance' },
          { name: `${name} units`, pricingModel: 'per_unit', unitPrice: price, meterId: meter.id },
        ],
      }),
    );
  const plan = await planOf('Model', h.kind, h.fee, h.arrears, h.unitPrice);
  const other = await planOf('Other', h.other.kind, h.other.fee, h.other.arrears, h.other.unitPrice);
  const itemsOf = (planKey: PlanKey, ids: string[], name: string, fee: number, arrears: boolean, price: string): ModelItem[] => [
    { id: ids[0]!, name: `${name} fee`, plan: planKey, metered: false, arrears, fee: BigInt(fee), pricing: 'flat', unitPrice: '', upTo: 0, over: '', from: null, to: null },
    { id: ids[1]!, name: `${name} units`, plan: planKey, metered: true, arrears: true, fee: 0n, pricing: 'per_unit', unitPrice: price, upTo: 0, over: '', from: null, to: null },
  ];
  model.items.push(
    ...itemsOf('A', plan.items.map((item) => item.id), 'Model', h.fee, h.arrears, h.unitPrice),
    ...itemsOf('B', other.items.map((item) => item.id), 'Other', h.other.fee, h.other.arrears, h.other.unitPrice),
  );
  // Written as the contract service writes it, without a contract workflow per history.
  const contracts = createContractRepository(db);
  const contract = await contracts.create(organisationId, {
    customerId: customer.id,
    currency: h.currency,
    startDate: isoOf(model.start),
    ...(model.end === null ? {} : { endDate: isoOf(model.end) }),
    billingAnchor: h.anchor,
    plans: [{ planId: plan.id }],
  });
  await contracts.setStatus(contract.id, 'active');
  model.contractPlans.push({ id: contract.plans[0]!.id, plan: 'A', start: model.start, cut: null });
  // Its taxes, through the contract service: on every item, or on one item of the first plan.
  for (const [i, t] of h.taxes.entries()) {
    const appliesTo = t.on === 'all' ? 'all' : [plan.items[t.on === 'fee' ? 0 : 1]!.id];
    const made = await services.contracts.createTax(organisationId, contract.id, taxBody.parse({ name: `Tax ${i}`, rate: t.rate, appliesTo }));
    model.taxes.push({ name: made.name, rate: made.rate, appliesTo: made.appliesTo });
  }
  return { customerId: customer.id, contractId: contract.id, contractPlanIds: [contract.plans[0]!.id], planId: plan.id, otherPlanId: other.id, entityId: entity.id, meterId: meter.id, metric };
}

/** The contract's invoices (not deleted), with their lines, oldest first. */
async function invoicesOf(contract: Contract): Promise<Invoice[]> {
  const ids: string[] = await db('invoices').where({ organisation_id: tenant.organisationId, contract_id: contract.contractId }).whereNull('deleted_at').orderBy([{ column: 'created_at' }, { column: 'id' }]).pluck('id');
  const found = await createInvoiceRepository(db).findMany(tenant.organisationId, ids);
  return ids.map((id) => found.find((invoice) => invoice.id === id)!);
}

type Line = Invoice['items'][number];
type Problems = string[];

const isPriced = (line: Line) => line.planItemId !== null && line.couponId === null && line.planChangeId === null;
const showLine = (line: Line) => `${line.title} ${line.fromDate}..${line.toDate} ${line.quantity}×${line.price}`;

/** The ledger's charges a priced line stands for: a fee line's runs of days within its dates, a usage line's window. */
function chargesOfLine(model: Model, invoiceId: string, line: Line, charges: readonly ChargeRow[]): ChargeRow[] {
  const item = model.items.find((candidate) => candidate.id === line.planItemId);
  return charges.filter(
    (charge) =>
      charge.invoiceId === invoiceId &&
      charge.planItemId === line.planItemId &&
      (item?.metered ? charge.kind === 'usage' && charge.from === line.fromDate && charge.to === line.toDate : charge.kind === 'fee' && charge.from >= line.fromDate! && charge.to <= line.toDate!),
  );
}

// ---- the checks

/**
 * Every priced line of an invoice is what the ledger says the invoice charged: a fee line the sum of its
 * runs of days, which span its dates; a usage line its window's one charge (a per-unit line its units);
 * and no charge of the invoice is without its line.
 */
function checkLinesMatchLedger(model: Model, invoice: Invoice, charges: readonly ChargeRow[], problems: Problems): void {
  const mine = charges.filter((charge) => charge.invoiceId === invoice.id);
  const used = new Set<ChargeRow>();
  for (const line of invoice.items.filter(isPriced)) {
    const item = model.items.find((candidate) => candidate.id === line.planItemId);
    const where = `invoice ${invoice.id} line ${showLine(line)}`;
    if (!item) {
      problems.push(`${where}: not an item of the plan`);
      continue;
    }
    const covered = chargesOfLine(model, invoice.id, line, charges);
    if (covered.length === 0 || (item.metered && covered.length > 1)) {
      problems.push(`${where}: ${covered.length} charges in the ledger`);
      continue;
    }
    for (const charge of covered) {
      if (used.has(charge)) problems.push(`${where}: its charge ${charge.from}..${charge.to} belongs to another line too`);
      used.add(charge);
    }
    const amount = lineMinor(line.quantity, line.price, model.minor);
    const charged = sumMinor(covered.map((charge) => toMinor(charge.amount, model.minor)));
    if (charged !== amount) problems.push(`${where}: the line is ${fromMinor(amount, model.minor)}, its charges ${fromMinor(charged, model.minor)}`);
    if (item.pricing === 'per_unit' && !new DecimalJs(covered[0]!.quantity ?? 'NaN').equals(line.quantity)) problems.push(`${where}: ${line.quantity} units on the line, ${covered[0]!.quantity} in the ledger`);
    if (!item.metered) {
      const first = covered.map((charge) => charge.from).sort()[0];
      const last = covered.map((charge) => charge.to).sort().at(-1);
      if (first !== line.fromDate || last !== line.toDate) problems.push(`${where}: its charges run ${first}..${last}`);
    }
  }
  for (const charge of mine) {
    if (!used.has(charge)) problems.push(`invoice ${invoice.id}: ${charge.kind} charge of ${charge.planItemId} ${charge.from}..${charge.to} (${charge.amount}) has no line`);
    if (!isExactMinor(charge.amount, model.minor)) problems.push(`charge ${charge.from}..${charge.to} of ${charge.planItemId}: ${charge.amount} is not in whole minor units of ${model.currency}`);
  }
}

interface LedgerCheck {
  /** The billing date of the latest run: what is due by then is charged (after a run). */
  date: number;
  /** After a run every due day and usage unit is charged; after a sync, no more than arrived. */
  afterRun: boolean;
  /** The invoices this step made or priced again: their charges must be due on `date` under the terms as they stand. */
  fresh: ReadonlySet<string>;
}

/**
 * The ledger against the oracle, day by day. A fee's day in force on a contract plan and not suspended is
 * charged once when due (a suspended one at most once), never before it is due, never outside its days in
 * force; each run of days lies in one period of the version in force and is priced by the telescoping
 * proration of that period (so within a minor unit of fee × days / period days). A day the old contract plan
 * gave up by a plan change that stands may stay charged on it, in advance only, and only with a credit of
 * the change for its line. A usage window lies in one period; the windows that overlap charge together
 * exactly the units that arrived in their days (after a run; no more after a sync), each window priced as
 * its units rate; every due day of a metered item lies in a window charged.
 */
function checkLedger(model: Model, charges: readonly ChargeRow[], check: LedgerCheck, problems: Problems): void {
  const o = oracle(model);
  const horizon = model.end ?? check.date + 400;
  const days = (from: number, to: number) => [...Array(Math.max(0, to - from + 1)).keys()].map((i) => from + i);
  for (const item of model.items) {
    const mine = charges.filter((charge) => charge.planItemId === item.id);
    const counts = new Map<number, number>();
    for (const charge of mine) {
      const from = dayOf(charge.from);
      const to = dayOf(charge.to);
      const where = `${item.name} (${item.id}) ${charge.kind} ${charge.from}..${charge.to} on ${charge.invoiceId}`;
      const cp = o.contractPlan(charge.contractPlanId);
      if (!cp) {
        problems.push(`${where}: charged on contract plan ${charge.contractPlanId}, not one of the contract's`);
        continue;
      }
      if ((charge.kind === 'usage') !== item.metered) problems.push(`${where}: a ${charge.kind} charge of a ${item.metered ? 'metered' : 'fee'} item`);
      if (to < from) problems.push(`${where}: ends before it starts`);
      const [pf, pt] = o.periodOn(cp, from);
      if (charge.periodFrom !== isoOf(pf) || charge.periodTo !== isoOf(pt)) problems.push(`${where}: period ${charge.periodFrom}..${charge.periodTo}, the oracle's ${isoOf(pf)}..${isoOf(pt)}`);
      if (to > pt || to > o.versionOn(cp.plan, from).to) problems.push(`${where}: runs out of its period ${isoOf(pf)}..${isoOf(pt)} or of its billing-period version`);
      // A day a change gave up: of the old contract plan, after its cut, a day it served before the change.
      const change = cp.cut === null ? undefined : model.changes.find((candidate) => candidate.from === cp);
      const givenUp = (day: number) => change !== undefined && day > cp.cut! && day >= cp.start && day <= (model.end ?? Infinity) && (item.from === null || item.from <= day) && (item.to === null || day <= item.to);
      const outside = days(from, to).find((day) => !o.inForceOn(cp, item, day) && !givenUp(day));
      if (outside !== undefined) problems.push(`${where}: charges ${isoOf(outside)}, a day the item is not in force on ${cp.id}`);
      const given = days(from, to).filter((day) => !o.inForceOn(cp, item, day) && givenUp(day));
      if (given.length > 0) {
        if (item.metered || item.arrears) problems.push(`${where}: charges ${isoOf(given[0]!)}, which the change ${change!.id} gave up, in arrears`);
        else if (!change!.credits.some((credit) => credit.invoiceId === charge.invoiceId && credit.planItemId === item.id && credit.from <= given[0]! && given.at(-1)! <= credit.to)) {
          problems.push(`${where}: ${isoOf(given[0]!)}..${isoOf(given.at(-1)!)}, given up by the change ${change!.id} from ${isoOf(change!.day)}, stay charged without its credit`);
        }
      }
      if (check.fresh.has(charge.invoiceId)) {
        const early = days(from, to).find((day) => !o.due(item, day, check.date, cp));
        if (early !== undefined) problems.push(`${where}: charges ${isoOf(early)}, not due on ${isoOf(check.date)}`);
        if (item.metered) {
          const [sf, st] = o.spanOf(item, from, cp);
          if (sf !== from || st !== to) problems.push(`${where}: the window holding ${charge.from} is ${isoOf(sf)}..${isoOf(st)}`);
        }
      }
      if (item.metered) {
        if (charge.quantity === null || new DecimalJs(charge.quantity).isNegative()) problems.push(`${where}: units ${charge.quantity}`);
        if (item.pricing === 'per_unit') {
          const expected = rated(item, new DecimalJs(charge.quantity ?? 0), model.minor);
          if (toMinor(charge.amount, model.minor) !== expected) problems.push(`${where}: ${charge.quantity} × ${item.unitPrice} is ${fromMinor(expected, model.minor)}, charged ${charge.amount}`);
        }
        continue;
      }
      // fee × days from the period's start through each end / days in the period, half-up: the run is the difference.
      const periodDays = BigInt(pt - pf + 1);
      const through = (day: number) => divHalfUp(item.fee * BigInt(day - pf + 1), periodDays);
      const expected = through(to) - through(from - 1);
      const amount = toMinor(charge.amount, model.minor);
      if (amount !== expected) problems.push(`${where}: charged ${charge.amount}, the telescoping share of ${fromMinor(item.fee, model.minor)} is ${fromMinor(expected, model.minor)}`);
      const exact = item.fee * BigInt(to - from + 1);
      if (amount * periodDays - exact > periodDays || exact - amount * periodDays > periodDays) problems.push(`${where}: ${charge.amount} is more than a minor unit from ${fromMinor(item.fee, model.minor)} × ${to - from + 1} / ${periodDays}`);
      // Only the days the contract plan still serves count: those given up are paid back by the change's credit.
      for (const day of days(from, to)) if (o.inForceOn(cp, item, day)) counts.set(day, (counts.get(day) ?? 0) + 1);
    }

    if (item.metered) {
      // A graduated window charged more than once (late usage) rates, over all its charges, the units they
      // charged: each late charge is the difference of the rated amounts. (A per-unit one charges each delta's
      // units at the unit price, each rounded: checked charge by charge above.)
      const byWindow = new Map<string, ChargeRow[]>();
      for (const charge of mine) byWindow.set(`${charge.from} ${charge.to}`, [...(byWindow.get(`${charge.from} ${charge.to}`) ?? []), charge]);
      for (const [window, windowCharges] of item.pricing === 'graduated' ? byWindow : []) {
        const units = windowCharges.reduce((sum, charge) => sum.plus(charge.quantity ?? 0), new DecimalJs(0));
        const amount = sumMinor(windowCharges.map((charge) => toMinor(charge.amount, model.minor)));
        const expected = rated(item, units, model.minor);
        if (amount !== expected) problems.push(`${item.name}: window ${window} charged ${fromMinor(amount, model.minor)} for ${units.toFixed()} units, which rate ${fromMinor(expected, model.minor)}`);
      }
      // Windows that overlap charge, together, every unit that arrived in their days, once.
      const windows = [...byWindow.keys()].map((key) => key.split(' ').map(dayOf) as [number, number]).sort((a, b) => a[0] - b[0]);
      const groups: Array<[number, number]> = [];
      for (const [from, to] of windows) {
        const last = groups.at(-1);
        if (last && from <= last[1]) last[1] = Math.max(last[1], to);
        else groups.push([from, to]);
      }
      for (const [from, to] of groups) {
        const inGroup = mine.filter((charge) => dayOf(charge.from) >= from && dayOf(charge.to) <= to);
        const charged = inGroup.reduce((sum, charge) => sum.plus(charge.quantity ?? 0), new DecimalJs(0));
        const arrived = model.events.filter((event) => event.day >= from && event.day <= to).reduce((sum, event) => sum + event.units, 0);
        // A window charged while the contract ended inside it, its end since moved on, lies in a window of the
        // terms as they stand: late usage in its days is charged once that window is over, not before.
        const over = days(from, to).every((day) => !o.inForce(item, day) || o.due(item, day, check.date));
        if (check.afterRun && over ? !charged.equals(arrived) : charged.greaterThan(arrived)) {
          problems.push(`${item.name}: windows over ${isoOf(from)}..${isoOf(to)} charge ${charged.toFixed()} units, ${arrived} arrived in them (${inGroup.map((c) => `${c.from}..${c.to}: ${c.quantity}`).join(', ')})`);
        }
      }
      if (check.afterRun) {
        for (let day = model.start; day <= Math.min(horizon, check.date); day += 1) {
          if (o.inForce(item, day) && o.due(item, day, check.date) && !groups.some(([from, to]) => from <= day && day <= to)) {
            problems.push(`${item.name}: ${isoOf(day)} is due on ${isoOf(check.date)} and in no usage window charged`);
            break;
          }
        }
      }
      continue;
    }

    for (let day = model.start; day <= horizon && problems.length < 20; day += 1) {
      const times = counts.get(day) ?? 0;
      if (times > 1) problems.push(`${item.name}: ${isoOf(day)} charged ${times} times`);
      else if (check.afterRun && times === 0 && o.inForce(item, day) && !o.suspended(day) && o.due(item, day, check.date)) problems.push(`${item.name}: ${isoOf(day)} is due on ${isoOf(check.date)} and not charged`);
      // An item in advance is charged once its span has begun: that never changes for a day charged.
      else if (times === 1 && !item.arrears && !o.due(item, day, check.date)) problems.push(`${item.name}: ${isoOf(day)} charged before it was due (${isoOf(check.date)})`);
    }
    for (const day of counts.keys()) if (day < model.start || day > horizon) problems.push(`${item.name}: ${isoOf(day)} charged, outside the contract`);
  }
}

/** The run's totals (Postgres counts them from the outcomes) are the sums of its invoices' rounded lines, discounts included. */
async function checkRunTotals(model: Model, runId: string, invoices: Invoice[], problems: Problems): Promise<void> {
  const runs = createInvoiceRunRepository(db);
  const summary = await runs.summary(runId);
  const lines = sumMinor(invoices.flatMap((invoice) => invoice.items).map((line) => lineMinor(line.quantity, line.price, model.minor)));
  const total = sumMinor(summary.totals.map((entry) => toMinor(entry.amount, model.minor)));
  if (summary.failed > 0) problems.push(`run ${runId}: ${summary.failed} contract(s) failed: ${JSON.stringify(await runs.failures(runId))}`);
  if (total !== lines) problems.push(`run ${runId}: totals ${fromMinor(total, model.minor)}, its lines add up to ${fromMinor(lines, model.minor)}`);
  const created = summary.totals.reduce((sum, entry) => sum + entry.created, 0);
  if (created !== invoices.length) problems.push(`run ${runId}: says it made ${created} invoices, ${invoices.length} name it`);
}

/**
 * `amount` (minor units) shared over `items` in proportion to `weightOf` each, by largest remainder, the
 * earliest first on ties: the shares add up to `amount`.
 */
function sharedOver<T>(amount: bigint, items: readonly T[], weightOf: (item: T) => bigint): Array<[T, bigint]> {
  const whole = items.reduce((sum, item) => sum + weightOf(item), 0n);
  if (whole <= 0n) return [];
  const shares = items.map((item) => (amount * weightOf(item)) / whole);
  let left = amount - shares.reduce((sum, share) => sum + share, 0n);
  const order = items.map((item, i) => ({ i, lost: (amount * weightOf(item)) % whole })).sort((a, b) => (a.lost === b.lost ? a.i - b.i : a.lost > b.lost ? -1 : 1));
  for (let k = 0; left > 0n; k = (k + 1) % order.length, left -= 1n) shares[order[k]!.i]! += 1n;
  return items.map((item, i) => [item, shares[i]!]);
}

/**
 * The coupons' discount lines on the invoices a run made, in the order it made them (docs/adjustments.md,
 * "Coupons"): each coupon that still serves discounts, per plan item of each invoice, the lines of the
 * item's first periods still to serve (a line's period is its charges' period, told by its first and last
 * day; an item's periods come in the order of the first day its lines charge in each), and has served as
 * many periods as the item that took the most, if it took anything off an item billed for one of them. A
 * line of a period an earlier invoice billed for its plan item is a correction and never a period to serve:
 * a percentage coupon whose discount line on an earlier invoice met that period's days discounts it with the
 * item's other lines; no other coupon does. A percentage is taken off each plan item's lines, rounded half-up;
 * an amount (once per period served) is shared over the plan items in proportion to their lines, never
 * beyond them, invoice after invoice. Coupons stack in the order they were applied: each takes at most what
 * the earlier ones left on the lines it discounts, each of which took its discount off its lines in
 * proportion to what they had left. The model counts the periods.
 */
function checkCoupons(model: Model, invoices: readonly Invoice[], earlier: readonly Invoice[], charges: readonly ChargeRow[], problems: Problems): void {
  const fresh = new Set(invoices.map((invoice) => invoice.id));
  const pricedOf = (invoice: Invoice) =>
    invoice.items.filter(isPriced).map((line) => {
      // A period is its first and last day: a quarter and a year may start on the same day.
      const ofLine = chargesOfLine(model, invoice.id, line, charges);
      const charge = ofLine[0];
      const correction =
        charge !== undefined &&
        charges.some(
          (other) =>
            !fresh.has(other.invoiceId) && other.contractPlanId === charge.contractPlanId && other.planItemId === charge.planItemId && other.periodFrom === charge.periodFrom && other.periodTo === charge.periodTo,
        );
      // A usage correction stating no units settles amounts already net of the discount: no coupon discounts it.
      const settlesAmounts = correction && ofLine.every((one) => one.kind === 'usage' && one.quantity === null);
      return { line, period: charge ? `${charge.periodFrom} ${charge.periodTo}` : '', charge, correction, settlesAmounts, amount: lineMinor(line.quantity, line.price, model.minor) };
    });
  // What each priced line has left once the coupons applied before took their discount off it, by line id.
  const lineLeft = new Map<string, bigint>();
  for (const coupon of model.coupons) {
    const left = Math.max(0, coupon.periods - coupon.used);
    const where = `coupon ${coupon.code}`;
    if (coupon.removed) {
      for (const invoice of invoices) if (invoice.items.some((line) => line.couponId === coupon.id)) problems.push(`invoice ${invoice.id} ${where}: discounts while removed from the contract`);
      continue;
    }
    // The periods of each plan item this coupon discounted on earlier invoices, by the days of its lines there.
    const discountedEarlier = earlier.flatMap((invoice) => invoice.items).filter((line) => line.couponId === coupon.id);
    const servedEarlier = (entry: ReturnType<typeof pricedOf>[number]) =>
      coupon.percentOff !== null &&
      entry.charge !== undefined &&
      discountedEarlier.some((line) => line.planItemId === entry.line.planItemId && line.fromDate! <= entry.charge!.periodTo && line.toDate! >= entry.charge!.periodFrom);
    let served = 0;
    const eligibleOf = invoices.map((invoice) => {
      const byItem = new Map<string, ReturnType<typeof pricedOf>>();
      for (const entry of pricedOf(invoice)) byItem.set(entry.line.planItemId!, [...(byItem.get(entry.line.planItemId!) ?? []), entry]);
      const eligible = new Map<string, ReturnType<typeof pricedOf>>();
      for (const [planItemId, entries] of byItem) {
        // An item's periods still to serve in the order of the first day its lines charge in each; corrections are none.
        const firstDay = new Map<string, string>();
        for (const entry of entries) if (!entry.correction && (!firstDay.has(entry.period) || entry.line.fromDate! < firstDay.get(entry.period)!)) firstDay.set(entry.period, entry.line.fromDate!);
        const periods = [...firstDay.keys()].sort((a, b) => (firstDay.get(a)! === firstDay.get(b)! ? (a < b ? -1 : 1) : firstDay.get(a)! < firstDay.get(b)! ? -1 : 1));
        served = Math.max(served, Math.min(periods.length, left));
        eligible.set(
          planItemId,
          entries.filter((entry) => (entry.correction ? !entry.settlesAmounts && servedEarlier(entry) : periods.indexOf(entry.period) < left)),
        );
      }
      return eligible;
    });
    // The periods count as served only when the coupon took something off (a month billed at 0.00 leaves it).
    let tookAny = false;
    let budget = coupon.amountOff === null ? 0n : coupon.amountOff * BigInt(served);
    invoices.forEach((invoice, index) => {
      const lines = invoice.items.filter((line) => line.couponId === coupon.id);
      const at = `invoice ${invoice.id} ${where}`;
      const bases = [...eligibleOf[index]!].map(([planItemId, entries]) => ({ planItemId, entries, base: sumMinor(entries.map((entry) => entry.amount)) })).filter((entry) => entry.base > 0n);
      const whole = sumMinor(bases.map((entry) => entry.base));
      const taken = budget < whole ? budget : whole;
      let capped = false;
      for (const { planItemId, entries, base } of bases) {
        const line = lines.filter((candidate) => candidate.planItemId === planItemId);
        const discount = -sumMinor(line.map((candidate) => lineMinor(candidate.quantity, candidate.price, model.minor)));
        const leftOf = (entry: (typeof entries)[number]) => lineLeft.get(entry.line.id) ?? entry.amount;
        const leftOnLines = sumMinor(entries.map(leftOf));
        const room = leftOnLines > 0n ? leftOnLines : 0n;
        const cap = (value: bigint) => {
          if (value <= room) return value;
          capped = true;
          return room;
        };
        let expected: bigint | [bigint, bigint];
        if (coupon.percentOff !== null) expected = cap(roundedMinor(new DecimalJs(base.toString()).times(coupon.percentOff).dividedBy(100).dividedBy(scale(model.minor)), model.minor));
        else expected = [cap((taken * base) / whole), cap((taken * base + whole - 1n) / whole)];
        for (const [entry, share] of sharedOver(discount, entries.filter((entry) => leftOf(entry) > 0n), leftOf)) lineLeft.set(entry.line.id, leftOf(entry) - share);
        if (discount > 0n && entries.some((entry) => !entry.correction && entry.amount > 0n)) tookAny = true;
        const fine = typeof expected === 'bigint' ? discount === expected : discount >= expected[0] && discount <= expected[1];
        if (!fine) problems.push(`${at}: takes ${fromMinor(discount, model.minor)} off ${planItemId} (lines ${fromMinor(base, model.minor)}), not ${typeof expected === 'bigint' ? fromMinor(expected, model.minor) : expected.map((value) => fromMinor(value, model.minor)).join(' to ')}`);
        if (line.length > 1) problems.push(`${at}: ${line.length} discount lines for ${planItemId}`);
        if (discount > 0n && line.length === 1) {
          const from = entries.map((entry) => entry.line.fromDate!).sort()[0];
          const to = entries.map((entry) => entry.line.toDate!).sort().at(-1);
          if (line[0]!.fromDate !== from || line[0]!.toDate !== to) problems.push(`${at}: the discount of ${planItemId} runs ${line[0]!.fromDate}..${line[0]!.toDate}, its lines ${from}..${to}`);
        }
      }
      const all = -sumMinor(lines.map((candidate) => lineMinor(candidate.quantity, candidate.price, model.minor)));
      if (coupon.amountOff !== null && whole > 0n) {
        if (capped ? all > taken : all !== taken) problems.push(`${at}: takes ${fromMinor(all, model.minor)} in all, not ${capped ? 'at most ' : ''}${fromMinor(taken, model.minor)}`);
      }
      budget -= all;
      for (const line of lines) if (!bases.some((entry) => entry.planItemId === line.planItemId)) problems.push(`${at}: discounts ${line.planItemId}, which has no eligible line`);
    });
    if (tookAny && served > 0) coupon.used += served;
  }
  for (const invoice of invoices) {
    const discounts = invoice.items.filter((line) => line.couponId !== null);
    const priced = pricedOf(invoice);
    for (const line of discounts) if (!model.coupons.some((coupon) => coupon.id === line.couponId)) problems.push(`invoice ${invoice.id}: a discount of an unknown coupon ${line.couponId}`);
    // Together, the coupons never take more off a plan item than its lines charged: no invoice goes below zero by discounts.
    for (const planItemId of new Set(discounts.map((line) => line.planItemId))) {
      const charged = sumMinor(priced.filter((entry) => entry.line.planItemId === planItemId).map((entry) => entry.amount));
      const taken = -sumMinor(discounts.filter((line) => line.planItemId === planItemId).map((line) => lineMinor(line.quantity, line.price, model.minor)));
      if (taken > charged) problems.push(`invoice ${invoice.id}: its coupons take ${fromMinor(taken, model.minor)} off ${planItemId}, whose lines charge ${fromMinor(charged, model.minor)}`);
    }
  }
}

/**
 * What an invoice item can be credited, net of its coupon discounts: each coupon line of its plan item took
 * its discount off the lines within its days in proportion to their amounts, by largest remainder, so the
 * item's share is the proportional one rounded down or up.
 */
function creditableBounds(model: Model, invoice: Invoice, itemId: string): [bigint, bigint] {
  const amountOf = (line: Line) => toMinor(line.amount ?? '0', model.minor);
  const item = invoice.items.find((line) => line.id === itemId)!;
  let low = amountOf(item);
  let high = amountOf(item);
  const charged = invoice.items.filter((line) => line.couponId === null && amountOf(line) > 0n);
  for (const discount of invoice.items.filter((line) => line.couponId !== null && line.planItemId === item.planItemId)) {
    const covered = charged.filter((line) => line.planItemId === discount.planItemId && line.fromDate! >= discount.fromDate! && line.toDate! <= discount.toDate!);
    if (!covered.includes(item)) continue;
    const whole = sumMinor(covered.map(amountOf));
    const taken = -amountOf(discount) < whole ? -amountOf(discount) : whole;
    low -= (taken * amountOf(item) + whole - 1n) / whole;
    high -= (taken * amountOf(item)) / whole;
  }
  return [low, high];
}

/** The contract's taxes that apply to a line of `planItemId`: those on every item, and those that name it. */
const taxesOn = (model: Model, planItemId: string | null) => model.taxes.filter((t) => t.appliesTo === 'all' || (planItemId !== null && t.appliesTo.includes(planItemId)));

/** A percentage of an amount in minor units, half-up (away from zero) to the minor unit. */
const percentOf = (amount: bigint, rate: string) => {
  const exact = new DecimalJs(amount.toString()).times(rate).dividedBy(100);
  return BigInt(exact.abs().toDecimalPlaces(0, DecimalJs.ROUND_HALF_UP).times(exact.isNegative() ? -1 : 1).toFixed(0));
};

/**
 * A raised invoice's taxes (docs/adjustments.md, "Tax follows the lines"; docs/billing-runs.md): one tax line
 * per contract tax, in their order, each its rate on the rounded lines it applies to (every line, or the
 * lines of the plan items it names: their discounts and plan-change credits too), rounded half-up once per
 * tax line; the subtotal the sum of the rounded lines, the total the subtotal and the taxes. Never below zero.
 */
function checkTaxes(model: Model, invoice: Invoice, problems: Problems): void {
  const where = `invoice ${invoice.id} (${invoice.items.map(showLine).join('; ')})`;
  const amounts = invoice.items.map((line) => ({ line, amount: lineMinor(line.quantity, line.price, model.minor) }));
  for (const { line, amount } of amounts) if (toMinor(line.amount ?? 'NaN', model.minor) !== amount) problems.push(`${where}: line ${showLine(line)} reads ${line.amount}, not ${fromMinor(amount, model.minor)}`);
  const subtotal = sumMinor(amounts.map((entry) => entry.amount));
  const recorded = ((invoice.data as { taxes?: Array<{ name: string; rate: string; amount: string }> } | null)?.taxes ?? []).map((entry) => ({ ...entry, minor: toMinor(entry.amount, model.minor) }));
  if (recorded.length !== model.taxes.length) problems.push(`${where}: ${recorded.length} tax lines, the contract has ${model.taxes.length} taxes`);
  model.taxes.forEach((t, i) => {
    const base = sumMinor(amounts.filter(({ line }) => taxesOn(model, line.planItemId).includes(t)).map((entry) => entry.amount));
    const expected = percentOf(base, t.rate);
    const got = recorded[i];
    if (!got || got.name !== t.name || !new DecimalJs(got.rate).equals(t.rate) || got.minor !== expected) problems.push(`${where}: tax ${t.name} at ${t.rate} % of ${fromMinor(base, model.minor)} is ${fromMinor(expected, model.minor)}, the invoice has ${got ? `${got.name} ${got.rate} % ${got.amount}` : 'none'}`);
  });
  const taxes = sumMinor(recorded.map((entry) => entry.minor));
  if (toMinor(invoice.subtotal ?? 'NaN', model.minor) !== subtotal) problems.push(`${where}: subtotal ${invoice.subtotal}, its rounded lines add up to ${fromMinor(subtotal, model.minor)}`);
  if (toMinor(invoice.taxTotal ?? 'NaN', model.minor) !== taxes) problems.push(`${where}: tax total ${invoice.taxTotal}, its tax lines add up to ${fromMinor(taxes, model.minor)}`);
  if (toMinor(invoice.total ?? 'NaN', model.minor) !== subtotal + taxes) problems.push(`${where}: total ${invoice.total}, not its lines ${fromMinor(subtotal, model.minor)} and taxes ${fromMinor(taxes, model.minor)}`);
  if (subtotal + taxes < 0n) problems.push(`${where}: total ${fromMinor(subtotal + taxes, model.minor)} below zero`);
}

/**
 * What a plan change from `cp` on `day` gives back (docs/adjustments.md, "Plan changes"): per fee line in
 * advance that the contract plan's ledger says charged days from the change on, those days' telescoping
 * prorated share of the fee (the difference of fee × days from the period's start / period days, half-up,
 * at each end of each run of days), times the share of the line paid after its coupon lines (each takes
 * its discount off the lines of its plan item within its days, in proportion), half-up; at most what is
 * left of the line after credit notes. Also whether a draft billed any of them (the change is refused).
 */
function creditsOfChange(model: Model, cp: ModelContractPlan, day: number, charges: readonly ChargeRow[], invoices: readonly Invoice[]): { credits: ModelCredit[]; draft: boolean } {
  const o = oracle(model);
  const byLine = new Map<Line, { invoice: Invoice; item: ModelItem; runs: Array<[number, number]>; periods: Array<[number, number]> }>();
  let draft = false;
  for (const charge of charges) {
    const item = model.items.find((candidate) => candidate.id === charge.planItemId);
    if (charge.contractPlanId !== cp.id || charge.kind !== 'fee' || !item || item.metered || item.arrears || dayOf(charge.to) < day) continue;
    const invoice = invoices.find((candidate) => candidate.id === charge.invoiceId);
    const line = invoice?.items.find((candidate) => isPriced(candidate) && candidate.planItemId === item.id && candidate.fromDate! <= charge.from && charge.to <= candidate.toDate!);
    if (!invoice || !line) continue;
    if (invoice.status === 'draft') draft = true;
    const entry = byLine.get(line) ?? { invoice, item, runs: [], periods: [] };
    entry.runs.push([Math.max(dayOf(charge.from), day), Math.min(dayOf(charge.to), model.end ?? Infinity)]);
    entry.periods.push(o.periodOn(cp, dayOf(charge.from)));
    byLine.set(line, entry);
  }
  const credits: ModelCredit[] = [];
  for (const [line, { invoice, item, runs, periods }] of byLine) {
    let part = 0n;
    runs.forEach(([from, to], i) => {
      const [pf, pt] = periods[i]!;
      const through = (d: number) => divHalfUp(item.fee * BigInt(d - pf + 1), BigInt(pt - pf + 1));
      if (from <= to) part += through(to) - through(from - 1);
    });
    // The share paid: 1 less, for each coupon line of the plan item over the line's days, its discount over the lines it covers.
    const amountOf = (candidate: Line) => lineMinor(candidate.quantity, candidate.price, model.minor);
    let share = new DecimalJs(1);
    const coupons = invoice.items.filter((candidate) => candidate.couponId !== null && candidate.planItemId === line.planItemId && candidate.fromDate! <= line.fromDate! && line.toDate! <= candidate.toDate!);
    for (const coupon of coupons) {
      const base = sumMinor(invoice.items.filter((candidate) => isPriced(candidate) && candidate.planItemId === line.planItemId && coupon.fromDate! <= candidate.fromDate! && candidate.toDate! <= coupon.toDate!).map(amountOf));
      if (base > 0n) share = share.minus(new DecimalJs((-amountOf(coupon)).toString()).dividedBy(base.toString()));
    }
    const paid = coupons.length === 0 ? part : BigInt(new DecimalJs(part.toString()).times(DecimalJs.max(0, share)).toDecimalPlaces(0, DecimalJs.ROUND_HALF_UP).toFixed(0));
    const left = amountOf(line) - (model.credited.get(line.id) ?? 0n) - (creditedByChanges(model).get(line.id) ?? 0n);
    const amount = paid < left ? paid : left;
    const given = runs.filter(([from, to]) => from <= to);
    if (given.length === 0) continue;
    credits.push({ invoiceId: invoice.id, invoiceItemId: line.id, planItemId: item.id, from: given[0]![0], to: given.at(-1)![1], amount: amount > 0n ? amount : 0n });
  }
  return { credits, draft };
}

/**
 * The tax credited so far on an invoice once `byNotes` (net per invoice item, by its credit notes) and the
 * plan changes that stand are credited: per tax line, its rate on what is credited of the items it applies
 * to, half-up, never beyond the tax line; none on a tax line that came to nothing or below.
 */
function creditedTax(model: Model, invoice: Invoice, byNotes: ReadonlyMap<string, bigint>): bigint {
  const byChanges = creditedByChanges(model);
  const recorded = ((invoice.data as { taxes?: Array<{ amount: string }> } | null)?.taxes ?? []).map((entry) => toMinor(entry.amount, model.minor));
  return sumMinor(
    model.taxes.map((t, i) => {
      const base = sumMinor(invoice.items.filter((line) => taxesOn(model, line.planItemId).includes(t)).map((line) => (byNotes.get(line.id) ?? 0n) + (byChanges.get(line.id) ?? 0n)));
      const tax = percentOf(base, t.rate);
      // A tax line that came to nothing or below collected nothing and gives nothing back.
      if (recorded[i] === undefined) return tax;
      if (recorded[i]! <= 0n) return 0n;
      return tax > recorded[i]! ? recorded[i]! : tax;
    }),
  );
}

// ---- playing a history

async function play(h: History): Promise<void> {
  const organisationId = tenant.organisationId;
  const model: Model = {
    currency: h.currency,
    minor: MINOR[h.currency],
    anchor: h.anchor,
    start: h.start,
    end: h.end === null ? null : h.start + h.end,
    versions: { A: [{ from: null, kind: h.kind }], B: [{ from: null, kind: h.other.kind }] },
    items: [],
    contractPlans: [],
    changes: [],
    taxes: [],
    suspensions: [],
    events: [],
    coupons: [],
    credited: new Map(),
    clock: h.start,
  };
  const contract = await setUp(h, model);
  count(`history: ${h.currency}, ${h.anchor}`);
  count(`history: ${model.taxes.length} taxes${model.taxes.some((t) => t.appliesTo !== 'all') ? ', some on one item' : ''}`);
  const trace: string[] = [];
  const ledger = () => createChargeRepository(db).of(contract.contractPlanIds);
  const lastCharged = (charges: readonly ChargeRow[]) => charges.reduce((last, charge) => Math.max(last, dayOf(charge.to)), -Infinity);
  const fail = (problems: Problems) => {
    if (problems.length > 0) throw new Error(`${problems.slice(0, 20).join('\n')}\n-- history (contract ${contract.contractId}):\n${trace.join('\n')}`);
  };
  /** A service's answer as the model expects it: 'ok', or an error's kind and messages matching `answer`. */
  const expectAnswer = (outcome: { ok: unknown } | { error: AppError }, answer: string | RegExp) => {
    const got = describeOutcome(outcome);
    if (typeof answer === 'string' ? got !== answer : !answer.test(got)) fail([`answered "${got}", expected ${typeof answer === 'string' ? `"${answer}"` : answer}`]);
  };
  let latestRun = h.start;

  /**
   * A credit note for an amount (a quarter, a half, three quarters or all of what is left of the invoice's
   * total): the service spreads it over the lines. It never goes beyond what is left of the total, nor any
   * line beyond what the line was paid (net of its coupons and of what changes and notes credited), and its
   * subtotal and tax add up to the amount asked. Refused only where the invoice's customer credit paid part
   * of what is left (an unpaid invoice owes less than its total then).
   */
  /** The invoices a note by amount credited. */
  const amountNotesOn = new Set<string>();
  /**
   * The invoices a plan change's credit stood on at some time, undone since or not: a note issued beside it
   * rounded its tax with the change's credit counted, and a later note settles that minor unit per tax line.
   */
  const changeCreditedOn = new Set<string>();
  const creditByAmount = async (invoice: Invoice, quarters: number) => {
    const notesGross = sumMinor((await db('credit_notes').where({ invoice_id: invoice.id }).whereNot({ status: 'voided' }).pluck('total')).map((total: string) => toMinor(total, model.minor)));
    const left = leftToCredit(model, invoice, notesGross);
    const leftInTotal = left.low;
    const amount = (leftInTotal * BigInt(quarters)) / 4n;
    if (amount <= 0n) return;
    const body = createCreditNoteBody.parse({ reason: 'model', amount: fromMinor(amount, model.minor) });
    const outcome = await outcomeOf(() => services.creditNotes.create(organisationId, invoice.id, body));
    count(`credit note by amount: ${kindOf(outcome)}`);
    trace.push(`credit ${fromMinor(amount, model.minor)} of ${invoice.id} (total ${invoice.total}, left ${fromMinor(leftInTotal, model.minor)}): ${'ok' in outcome ? outcome.ok.items.map((item) => `${item.invoiceItemId} ${item.amount}`).join(', ') : describeOutcome(outcome)}`);
    const problems: Problems = [];
    if ('ok' in outcome) {
      const note = outcome.ok;
      amountNotesOn.add(invoice.id);
      if (note.status !== 'issued') problems.push(`credit note ${note.id} is ${note.status}`);
      if (toMinor(note.total, model.minor) !== amount) problems.push(`credit note ${note.id}: total ${note.total}, asked ${fromMinor(amount, model.minor)}`);
      const subtotal = sumMinor(note.items.map((item) => toMinor(item.amount, model.minor)));
      if (toMinor(note.subtotal, model.minor) !== subtotal || subtotal + toMinor(note.taxTotal, model.minor) !== amount || toMinor(note.taxTotal, model.minor) < 0n) {
        problems.push(`credit note ${note.id}: lines ${fromMinor(subtotal, model.minor)}, subtotal ${note.subtotal}, tax ${note.taxTotal}, total ${note.total}`);
      }
      for (const item of note.items) {
        const credited = toMinor(item.amount, model.minor);
        const before = model.credited.get(item.invoiceItemId) ?? 0n;
        model.credited.set(item.invoiceItemId, before + credited);
        const high = creditableBounds(model, invoice, item.invoiceItemId)[1];
        const byChanges = creditedByChanges(model).get(item.invoiceItemId) ?? 0n;
        if (credited < 0n || before + byChanges + credited > high) problems.push(`credit note ${note.id}: line ${item.invoiceItemId} credited ${fromMinor(before + byChanges + credited, model.minor)} in all, more than it was paid, at most ${fromMinor(high, model.minor)}`);
      }
    } else if (!(outcome.error.kind === 'conflict' && toMinor(invoice.creditsApplied, model.minor) > 0n)) {
      problems.push(`credit of ${fromMinor(amount, model.minor)} with ${fromMinor(leftInTotal, model.minor)} left of the total: ${describeOutcome(outcome)}`);
    }
    fail(problems);
  };

  /** A draft raised through its invoice workflow, as `POST /invoices/{id}/raise` does. */
  const raise = async (invoiceId: string) => {
    const raised = await services.invoices.transition(organisationId, invoiceId, 'raise');
    if (raised.status !== 'raised') fail([`raise ${invoiceId}: the invoice is ${raised.status}`]);
    count(model.taxes.length > 0 ? 'raise: with taxes' : 'raise');
    trace.push(`raise ${invoiceId}: total ${raised.total}`);
    const problems: Problems = [];
    checkTaxes(model, (await createInvoiceRepository(db).findMany(organisationId, [invoiceId]))[0]!, problems);
    fail(problems);
  };

  const storedChange = async (id: string) => toPlanChange((await createPlanChangeRepository(db).find(organisationId, contract.contractId, id))!, model.currency);

  /**
   * The changes still to settle, after a run: a run that made an invoice settles every one of them, on the
   * invoice of the new contract plan, else of the old one, else its first; each credit a line `Unused …` of
   * the credit's days and amount, or less of it where the invoice, taxes included, would go below zero (less
   * a minor unit per tax for their rounding), the rest with its taxes to the customer's credit balance. A
   * run that made none leaves them pending while the contract runs; after the contract's last day it
   * settles those in force by its date, each whole to the balance with its taxes.
   */
  const withTaxes = (credit: ModelCredit, amount: bigint) => {
    const rate = taxesOn(model, credit.planItemId).reduce((sum, t) => sum.plus(t.rate), new DecimalJs(0));
    return new DecimalJs(amount.toString()).times(rate.plus(100)).dividedBy(100);
  };
  const checkSettlements = async (date: number, made: ReadonlySet<string>, fresh: readonly Invoice[], problems: Problems) => {
    for (const change of model.changes.filter((candidate) => candidate.settledBy === null)) {
      const stored = await storedChange(change.id);
      if (made.size === 0 && (change.day > date || model.end === null || model.end >= date)) {
        if (stored.status !== 'pending') problems.push(`plan change ${change.id}: ${stored.status} by a run that made no invoice, before the change's first day or while the contract runs`);
        continue;
      }
      if (made.size === 0) {
        if (stored.status !== 'settled' || stored.settledInvoiceId !== null) {
          problems.push(`plan change ${change.id}: ${stored.status} by ${stored.settledInvoiceId}, not settled to the balance by a run that made no invoice`);
          continue;
        }
        change.settledBy = TO_BALANCE;
        count('plan change: settled whole to the balance');
        const owed = change.credits.filter((credit) => credit.amount > 0n);
        const exact = owed.reduce((sum, credit) => sum.plus(withTaxes(credit, credit.amount)), new DecimalJs(0));
        const balance = stored.creditedToBalance === null ? null : new DecimalJs(toMinor(stored.creditedToBalance, model.minor).toString());
        if (owed.length === 0 ? balance !== null : balance === null || balance.minus(exact).abs().greaterThan(owed.length)) {
          problems.push(`plan change ${change.id}: ${stored.creditedToBalance} to the balance, its credits come to ${fromMinor(BigInt(exact.toFixed(0)), model.minor)} with their taxes`);
        }
        continue;
      }
      const preferred = fresh.find((invoice) => invoice.ContractPlanId === change.to.id) ?? fresh.find((invoice) => invoice.ContractPlanId === change.from.id) ?? fresh[0]!;
      if (stored.status !== 'settled' || stored.settledInvoiceId !== preferred.id) {
        problems.push(`plan change ${change.id}: ${stored.status} by ${stored.settledInvoiceId}, not settled by ${preferred.id}`);
        continue;
      }
      change.settledBy = preferred.id;
      count('plan change: settled');
      const lines = preferred.items.filter((line) => line.planChangeId === change.id);
      const used = new Set<Line>();
      let toBalance = new DecimalJs(0);
      let rests = 0;
      for (const credit of change.credits.filter((candidate) => candidate.amount > 0n)) {
        const mine = lines.filter((line) => line.planItemId === credit.planItemId && line.fromDate === isoOf(credit.from) && line.toDate === isoOf(credit.to));
        mine.forEach((line) => used.add(line));
        if (mine.length > 1) problems.push(`plan change ${change.id}: ${mine.length} lines credit ${credit.invoiceItemId}`);
        const onInvoice = -sumMinor(mine.map((line) => lineMinor(line.quantity, line.price, model.minor)));
        if (onInvoice < 0n || onInvoice > credit.amount) problems.push(`plan change ${change.id}: its line credits ${fromMinor(onInvoice, model.minor)} of ${credit.invoiceItemId}, whose credit is ${fromMinor(credit.amount, model.minor)}`);
        const rest = credit.amount - onInvoice;
        if (rest > 0n) {
          rests += 1;
          toBalance = toBalance.plus(withTaxes(credit, rest));
        }
      }
      for (const line of lines) if (!used.has(line)) problems.push(`plan change ${change.id}: line ${showLine(line)} credits nothing the change gives back`);
      const balance = stored.creditedToBalance === null ? null : new DecimalJs(toMinor(stored.creditedToBalance, model.minor).toString());
      if (rests === 0 ? balance !== null : balance === null || balance.minus(toBalance).abs().greaterThan(rests)) {
        problems.push(`plan change ${change.id}: ${stored.creditedToBalance} to the balance, the credits left off the invoice come to ${fromMinor(BigInt(toBalance.toFixed(0)), model.minor)} with their taxes`);
      }
      if (rests > 0) {
        count('plan change: credit to the balance');
        // Left off only when the invoice, taxes included, had no more room.
        const estimate = preferred.items.reduce((sum, line) => {
          const rate = taxesOn(model, line.planItemId).reduce((total, t) => total.plus(t.rate), new DecimalJs(0));
          return sum.plus(new DecimalJs(lineMinor(line.quantity, line.price, model.minor).toString()).times(rate.plus(100)).dividedBy(100));
        }, new DecimalJs(0));
        if (estimate.greaterThanOrEqualTo(model.taxes.length + 2)) problems.push(`plan change ${change.id}: credits left off invoice ${preferred.id}, which had ${estimate.toFixed(2)} minor units left with its taxes`);
      }
    }
  };

  /** One invoice run of the contract on `date`, through the run's own steps; then everything checked. Answers the invoices it made. */
  const run = async (date: number) => {
    const billingDate = isoOf(date);
    const { runId } = await services.invoiceRuns.begin({ organisationId, workflowId: `billing-model:${randomUUID()}`, billingDate, dryRun: false, contractIds: [contract.contractId] });
    await services.invoiceRuns.billContracts({ organisationId, runId, billingDate, dryRun: false, contractIds: [contract.contractId] });
    await services.invoiceRuns.finish({ runId });
    latestRun = Math.max(latestRun, date);
    const made = new Set(await services.invoiceRuns.invoiceIdsOf(runId));
    const invoices = await invoicesOf(contract);
    // In the order the run made them: by contract plan, the contract's first plan first.
    const order = (invoice: Invoice) => model.contractPlans.findIndex((cp) => cp.id === invoice.ContractPlanId);
    const fresh = invoices.filter((invoice) => made.has(invoice.id)).sort((a, b) => order(a) - order(b));
    const charges = await ledger();
    trace.push(`run ${billingDate}: ${fresh.map((invoice) => `${invoice.id} [${invoice.items.map(showLine).join('; ')}]`).join(', ') || 'nothing'}`);
    count(made.size > 0 ? 'run: made an invoice' : 'run: nothing due');
    for (const line of fresh.flatMap((invoice) => invoice.items)) {
      if (line.couponId !== null) count('run: coupon line');
      else if (line.planChangeId !== null) count('run: plan-change credit line');
      else if (line.title.includes(': usage of ')) count('run: late usage line');
      else if (!model.items.find((item) => item.id === line.planItemId)?.metered && chargesOfLine(model, fresh[0]!.id, line, charges).length > 1) count('run: fee line split by a suspension');
    }
    const problems: Problems = [];
    await checkRunTotals(model, runId, fresh, problems);
    for (const invoice of invoices) checkLinesMatchLedger(model, invoice, charges, problems);
    checkCoupons(
      model,
      fresh,
      invoices.filter((invoice) => !made.has(invoice.id)),
      charges,
      problems,
    );
    await checkSettlements(date, made, fresh, problems);
    checkLedger(model, charges, { date, afterRun: true, fresh: made }, problems);
    const onContract = await services.coupons.onContract(organisationId, contract.contractId);
    for (const coupon of model.coupons.filter((candidate) => !candidate.removed)) {
      const used = onContract.find((row) => row.coupon.id === coupon.id)?.periodsUsed;
      if (used !== coupon.used) problems.push(`coupon ${coupon.code}: served ${used} periods, the model counts ${coupon.used}`);
    }
    fail(problems);
    return [...made];
  };

  for (const s of h.steps) {
    const clock = model.clock;
    if (s.kind === 'run') {
      model.clock += s.advance;
      const made = await run(model.clock);
      // As a run with autoRaiseGeneratedInvoices would: its invoices raised through their workflow.
      if (s.raise) for (const invoiceId of made) await raise(invoiceId);
    } else if (s.kind === 'addItem') {
      const from = clock + s.offset;
      const name = `Added ${model.items.length}`;
      let item: ModelItem;
      let body: unknown;
      if (s.metered) {
        item = { id: '', name, plan: 'A', metered: true, arrears: true, fee: 0n, pricing: s.graduated ? 'graduated' : 'per_unit', unitPrice: s.price, upTo: s.upTo, over: s.over, from, to: null };
        body = s.graduated
          ? { name, pricingModel: 'graduated', meterId: contract.meterId, tiers: [{ upTo: String(s.upTo), unitPrice: s.price }, { upTo: null, unitPrice: s.over }] }
          : { name, pricingModel: 'per_unit', meterId: contract.meterId, unitPrice: s.price };
      } else {
        // A price with up to two decimals more than the currency has, and maybe a quantity: the fee is their product, rounded.
        const price = new DecimalJs(s.fee).dividedBy(scale(model.minor + s.extraDecimals)).toFixed();
        item = { id: '', name, plan: 'A', metered: false, arrears: s.arrears, fee: lineMinor(s.quantity ?? '1', price, model.minor), pricing: 'flat', unitPrice: price, upTo: 0, over: '', from, to: null };
        body = { name, pricingModel: 'flat', unitPrice: price, ...(s.quantity === null ? {} : { quantity: s.quantity }), billingTiming: s.arrears ? 'in_arrears' : 'in_advance' };
      }
      const added = await services.billingPlans.addItem(organisationId, contract.planId, planItemInput.parse(body), isoOf(from));
      if (added.effectiveFrom !== isoOf(from) || added.effectiveTo !== null) fail([`add ${name}: in force ${added.effectiveFrom}..${added.effectiveTo}, not from ${isoOf(from)}`]);
      model.items.push({ ...item, id: added.id });
      count(`add item: ${item.pricing}`);
      trace.push(`add ${name} (${added.id}): ${JSON.stringify(body)} from ${isoOf(from)}`);
    } else if (s.kind === 'removeItem') {
      // Any item of the plan, an item removed already too: that one answers 409.
      const known = model.items.filter((item) => item.plan === 'A' && !item.deleted);
      const item = known[s.which % known.length]!;
      const from = clock + s.offset;
      const chargedThrough = lastCharged((await ledger()).filter((charge) => charge.planItemId === item.id));
      const outcome = await outcomeOf(() => services.billingPlans.deleteItem(organisationId, contract.planId, item.id, isoOf(from)));
      count(`remove item: ${kindOf(outcome)}`);
      trace.push(`remove ${item.name} from ${isoOf(from)} (charged through ${showDay(chargedThrough)}): ${describeOutcome(outcome)}`);
      if (item.to !== null) {
        // Removed once is removed: a later date would bring back days it was out of force.
        expectAnswer(outcome, `conflict: the plan item was already removed: its last day in force is ${isoOf(item.to)}`);
        continue;
      }
      if (from <= chargedThrough) {
        // Inside a span already charged: refused, naming the charge and the first day the removal may take effect.
        expectAnswer(outcome, new RegExp(`^conflict: invoice \\S+ charged plan item ${item.id} for \\S+ to ${isoOf(chargedThrough)}: the item can change from ${isoOf(chargedThrough + 1)} on, not from ${isoOf(from)}$`));
        continue;
      }
      expectAnswer(outcome, 'ok');
      // An item never charged that would end before its first day in force was never in force: it is deleted.
      if (!Number.isFinite(chargedThrough) && item.from !== null && from - 1 < item.from) item.deleted = true;
      item.to = from - 1;
    } else if (s.kind === 'period') {
      const from = clock + s.offset;
      // The plan's charges on any contract plan, days given up by a plan change too.
      const chargedThrough = lastCharged((await ledger()).filter((charge) => model.items.some((item) => item.plan === 'A' && item.id === charge.planItemId)));
      const outcome = await outcomeOf(() => services.billingPlans.update(organisationId, contract.planId, updatePlanBody.parse({ billingPeriod: s.to, effectiveDate: isoOf(from) })));
      count(`billing period: ${kindOf(outcome)}`);
      trace.push(`billing period ${s.to} from ${isoOf(from)} (charged through ${showDay(chargedThrough)}): ${describeOutcome(outcome)}`);
      if (from <= chargedThrough) {
        expectAnswer(outcome, new RegExp(`^conflict: invoice \\S+ charged plan item \\S+ for \\S+ to ${isoOf(chargedThrough)}: the billing period can change from ${isoOf(chargedThrough + 1)} on, not from ${isoOf(from)}$`));
        continue;
      }
      expectAnswer(outcome, 'ok');
      model.versions.A = [...model.versions.A.filter((version) => version.from === null || version.from < from), { from, kind: s.to }];
    } else if (s.kind === 'end') {
      const end = s.offset === null ? null : clock + s.offset;
      const chargedThrough = lastCharged(await ledger());
      const outcome = await outcomeOf(() => services.contracts.update(organisationId, contract.contractId, { endDate: end === null ? null : isoOf(end) }));
      count(`end date: ${kindOf(outcome)}${'ok' in outcome && (end === null || (model.end !== null && end > model.end)) ? ', later' : ''}`);
      trace.push(`end ${end === null ? 'open' : isoOf(end)} (charged through ${showDay(chargedThrough)}): ${describeOutcome(outcome)}`);
      if (end !== null && end < model.start) {
        expectAnswer(outcome, `validation: must not be before the contract's startDate ${isoOf(model.start)}`);
        continue;
      }
      if (end !== null && end < chargedThrough) {
        expectAnswer(outcome, new RegExp(`^conflict: invoice \\S+ charged plan item \\S+ for \\S+ to ${isoOf(chargedThrough)}: the contract cannot end before ${isoOf(chargedThrough)}$`));
        continue;
      }
      expectAnswer(outcome, 'ok');
      model.end = end;
    } else if (s.kind === 'suspend') {
      model.clock += s.advance;
      const latest = model.suspensions.at(-1);
      if (latest && (latest.to === null || latest.to >= model.clock)) continue;
      await createContractRepository(db).openSuspension(organisationId, contract.contractId, isoOf(model.clock));
      // Resumed `days` later (the suspension's last day is the day before), or left open.
      if (s.days !== null) await createContractRepository(db).closeSuspension(contract.contractId, isoOf(model.clock + s.days));
      model.suspensions.push({ from: model.clock, to: s.days === null ? null : model.clock + s.days - 1 });
      count(s.days === null ? 'suspend' : 'suspend for some days');
      trace.push(`suspend from ${isoOf(model.clock)}${s.days === null ? '' : ` for ${s.days} days`}`);
    } else if (s.kind === 'resume') {
      model.clock += s.advance;
      const open = model.suspensions.find((suspension) => suspension.to === null);
      if (!open) continue;
      await createContractRepository(db).closeSuspension(contract.contractId, isoOf(model.clock));
      if (open.from >= model.clock) model.suspensions.splice(model.suspensions.indexOf(open), 1);
      else open.to = model.clock - 1;
      count('resume');
      trace.push(`resume on ${isoOf(model.clock)}`);
    } else if (s.kind === 'usage') {
      const day = clock - s.back;
      await storeUsageEvent(db, { organisationId, customerEntityId: contract.entityId, metric: contract.metric, value: String(s.units), timestamp: `${isoOf(day)}T12:00:00Z` });
      model.events.push({ day, units: s.units });
      if (day < latestRun) count('usage: for a day before the latest run');
      trace.push(`usage ${s.units} on ${isoOf(day)}`);
    } else if (s.kind === 'sync') {
      const latest = (await invoicesOf(contract)).at(-1);
      if (!latest || latest.status !== 'draft') continue;
      await services.invoiceItems.syncFromPlan(organisationId, latest.id);
      const invoices = await invoicesOf(contract);
      const synced = invoices.find((invoice) => invoice.id === latest.id)!;
      const same = JSON.stringify(synced.items.map(showLine).sort()) === JSON.stringify(latest.items.map(showLine).sort());
      count(same ? 'sync: unchanged' : 'sync: lines changed');
      trace.push(`sync ${latest.id} (${calendarDay(latest.date)}): [${synced.items.map(showLine).join('; ')}]`);
      const charges = await ledger();
      const problems: Problems = [];
      for (const invoice of invoices) checkLinesMatchLedger(model, invoice, charges, problems);
      // Priced again on its date, its days due then: in advance, a day charged was due on the latest run's date.
      checkLedger(model, charges, { date: dayOf(calendarDay(latest.date)), afterRun: false, fresh: new Set([latest.id]) }, problems);
      const kept = (invoice: Invoice) => JSON.stringify(invoice.items.filter((line) => !isPriced(line) && line.couponId === null).map(showLine).sort());
      if (kept(synced) !== kept(latest)) problems.push(`sync ${latest.id}: the lines not priced from the plan were ${kept(latest)}, now ${kept(synced)}`);
      // Each coupon line stays: a percentage coupon's is its percentage of its plan item's lines now priced
      // within its days, an amount coupon's what it took, each cut to what the coupon lines before it left on
      // those lines (each kept its amount off its lines in proportion to what they had left); none where
      // nothing is left to discount.
      const lineLeft = new Map<string, bigint>();
      for (const line of latest.items.filter((candidate) => candidate.couponId !== null)) {
        const within = synced.items.filter((priced) => isPriced(priced) && priced.planItemId === line.planItemId && priced.fromDate! >= line.fromDate! && priced.toDate! <= line.toDate!);
        const amountOfLine = (priced: (typeof within)[number]) => lineMinor(priced.quantity, priced.price, model.minor);
        const gross = sumMinor(within.map(amountOfLine));
        const leftOf = (priced: (typeof within)[number]) => lineLeft.get(priced.id) ?? amountOfLine(priced);
        const percentOff = model.coupons.find((coupon) => coupon.id === line.couponId)?.percentOff ?? null;
        const was =
          percentOff === null
            ? -lineMinor(line.quantity, line.price, model.minor)
            : roundedMinor(new DecimalJs((gross > 0n ? gross : 0n).toString()).times(percentOff).dividedBy(100).dividedBy(scale(model.minor)), model.minor);
        const leftOnLines = sumMinor(within.map(leftOf));
        const left = leftOnLines > 0n ? leftOnLines : 0n;
        const expected = was < left ? was : left;
        for (const [priced, share] of sharedOver(expected, within.filter((priced) => leftOf(priced) > 0n), leftOf)) lineLeft.set(priced.id, leftOf(priced) - share);
        const now = synced.items.find((candidate) => candidate.id === line.id);
        const takes = now ? -lineMinor(now.quantity, now.price, model.minor) : 0n;
        if (takes !== expected) problems.push(`sync ${latest.id}: ${showLine(line)} now takes ${fromMinor(takes, model.minor)}, not ${fromMinor(expected, model.minor)}`);
      }
      fail(problems);
    } else if (s.kind === 'coupon') {
      const code = `M${randomUUID().slice(0, 12)}`;
      const amountOff = s.percentOff === null ? BigInt(s.amountOff) : null;
      const body = createCouponBody.parse({
        code,
        ...(s.percentOff !== null ? { percentOff: s.percentOff } : { amountOff: fromMinor(amountOff!, model.minor), currency: model.currency }),
        duration: s.duration,
        ...(s.duration === 'repeating' ? { durationPeriods: s.periods } : {}),
      });
      const coupon = await services.coupons.create(organisationId, body);
      await services.coupons.apply(organisationId, contract.contractId, code);
      model.coupons.push({ id: coupon.id, code, percentOff: s.percentOff, amountOff, periods: s.duration === 'once' ? 1 : s.duration === 'repeating' ? s.periods : Infinity, used: 0 });
      count(`coupon: ${s.percentOff === null ? 'amount' : 'percent'} ${s.duration}`);
      trace.push(`coupon ${code}: ${JSON.stringify(body)}`);
    } else if (s.kind === 'recoupon') {
      // A coupon removed from the contract, applied again, or both: the periods it served belong to the
      // contract and the coupon, so applied again it serves only those it has not served; it stacks after
      // the coupons on the contract then.
      if (model.coupons.length === 0) continue;
      const coupon = model.coupons[s.which % model.coupons.length]!;
      if (!coupon.removed) {
        const row = (await services.coupons.onContract(organisationId, contract.contractId)).find((candidate) => candidate.coupon.id === coupon.id)!;
        await services.coupons.remove(organisationId, contract.contractId, row.id);
        coupon.removed = true;
        count('coupon: removed');
        trace.push(`coupon ${coupon.code} removed (served ${coupon.used} of ${coupon.periods})`);
      }
      if (!s.reapply) continue;
      const outcome = await outcomeOf(() => services.coupons.apply(organisationId, contract.contractId, coupon.code));
      count(`coupon: applied again: ${kindOf(outcome)}`);
      trace.push(`coupon ${coupon.code} applied again: ${'ok' in outcome ? `served ${outcome.ok.periodsUsed}` : describeOutcome(outcome)}`);
      expectAnswer(outcome, 'ok');
      if ('ok' in outcome && outcome.ok.periodsUsed !== coupon.used) fail([`coupon ${coupon.code} applied again: served ${outcome.ok.periodsUsed} periods, the model counts ${coupon.used}`]);
      coupon.removed = false;
      model.coupons.splice(model.coupons.indexOf(coupon), 1);
      model.coupons.push(coupon);
    } else if (s.kind === 'raise') {
      const latest = (await invoicesOf(contract)).at(-1);
      if (latest?.status === 'draft') await raise(latest.id);
    } else if (s.kind === 'credit') {
      // An invoice raised: the latest draft is raised first if none is yet.
      const drafts = (await invoicesOf(contract)).filter((invoice) => invoice.status === 'draft');
      if (drafts.length > 0 && !(await invoicesOf(contract)).some((invoice) => invoice.status === 'raised')) await raise(drafts.at(-1)!.id);
      const raised = (await invoicesOf(contract)).filter((invoice) => invoice.status === 'raised');
      if (raised.length === 0) continue;
      const invoice = raised[s.invoice % raised.length]!;
      if (s.byAmount) {
        await creditByAmount(invoice, s.quarters);
        continue;
      }
      const lines = invoice.items.filter((line) => isPriced(line) && toMinor(line.amount ?? '0', model.minor) > 0n);
      if (lines.length === 0) continue;
      const line = lines[s.line % lines.length]!;
      // A quarter, a half, three quarters or all of its units (whole units for usage).
      const whole = new DecimalJs(line.quantity);
      const units = model.items.find((item) => item.id === line.planItemId)?.pricing === 'per_unit' ? DecimalJs.max(1, whole.times(s.quarters).dividedBy(4).floor()) : whole.times(s.quarters).dividedBy(4);
      const quantity = units.toDecimalPlaces(6, DecimalJs.ROUND_DOWN);
      if (quantity.lessThanOrEqualTo(0)) continue;
      const [low, high] = creditableBounds(model, invoice, line.id);
      // Credited already: by credit notes, and by the plan changes that stand.
      const byNotes = model.credited.get(line.id) ?? 0n;
      const already = byNotes + (creditedByChanges(model).get(line.id) ?? 0n);
      const taxBefore = creditedTax(model, invoice, new Map(model.credited));
      const price = lineMinor(quantity.toFixed(), line.price, model.minor);
      const amountOfLine = toMinor(line.amount!, model.minor);
      // Those units' price less their share of the line's discounts: within half a minor unit of price × creditable / amount.
      const atMost = (2n * price * high + amountOfLine) / (2n * amountOfLine);
      const atLeast = (2n * price * low - amountOfLine + 2n * amountOfLine - 1n) / (2n * amountOfLine);
      // What is left of the invoice's total once its notes so far are taken off: no note credits beyond it
      // (docs/adjustments.md), so a note that may exceed it, with its own taxes at most, may be refused.
      const notesGross = sumMinor((await db('credit_notes').where({ invoice_id: invoice.id }).whereNot({ status: 'voided' }).pluck('total')).map((total: string) => toMinor(total, model.minor)));
      const leftInTotal = leftToCredit(model, invoice, notesGross).low;
      const taxAtMost = taxesOn(model, line.planItemId).reduce((sum, t) => sum + BigInt(new DecimalJs(atMost.toString()).times(t.rate).dividedBy(100).ceil().toFixed()) + 1n, 0n);
      const body = createCreditNoteBody.parse({ reason: 'model', items: [{ invoiceItemId: line.id, quantity: quantity.toFixed() }] });
      const outcome = await outcomeOf(() => services.creditNotes.create(organisationId, invoice.id, body));
      count(`credit note: ${kindOf(outcome)}`);
      trace.push(`credit ${quantity.toFixed()} of ${showLine(line)} on ${invoice.id} (net ${fromMinor(low, model.minor)}..${fromMinor(high, model.minor)}, credited ${fromMinor(already, model.minor)}): ${'ok' in outcome ? outcome.ok.items.map((item) => item.amount).join(', ') : describeOutcome(outcome)}`);
      const problems: Problems = [];
      if ('ok' in outcome) {
        const note = outcome.ok;
        if (note.status !== 'issued') problems.push(`credit note ${note.id} is ${note.status}`);
        const credited = sumMinor(note.items.map((item) => toMinor(item.amount, model.minor)));
        if (note.items.length !== 1 || note.items[0]!.invoiceItemId !== line.id) problems.push(`credit note ${note.id} credits ${JSON.stringify(note.items)}`);
        if (credited > price || credited > atMost || credited < atLeast) problems.push(`credit note ${note.id}: ${quantity.toFixed()} units credit ${fromMinor(credited, model.minor)}, not within ${fromMinor(atLeast, model.minor)}..${fromMinor(atMost, model.minor)} (their price ${fromMinor(price, model.minor)})`);
        if (already + credited > high) problems.push(`line ${line.id}: credited ${fromMinor(already + credited, model.minor)} in all, more than it was paid, at most ${fromMinor(high, model.minor)}`);
        model.credited.set(line.id, byNotes + credited);
        // Its tax: the line's own taxes on what is credited so far, less the tax credited before (docs/adjustments.md).
        const taxAfter = creditedTax(model, invoice, new Map(model.credited));
        const taxes = ((invoice.data as { taxes?: Array<{ amount: string }> } | null)?.taxes ?? []).map((entry) => toMinor(entry.amount, model.minor));
        let expectedTax = taxAfter - taxBefore;
        if (expectedTax > sumMinor(taxes) - taxBefore) expectedTax = sumMinor(taxes) - taxBefore;
        if (expectedTax < 0n) expectedTax = 0n;
        const noteTax = toMinor(note.taxTotal, model.minor);
        const ownTaxes = taxesOn(model, line.planItemId);
        // A plan change's credit, or an earlier note by amount (which splits its gross into net and tax with
        // rounding of its own), may leave a minor unit of tax per tax line for this note to settle.
        const changesOnInvoice = amountNotesOn.has(invoice.id) || changeCreditedOn.has(invoice.id) || model.changes.some((change) => change.credits.some((c) => c.invoiceId === invoice.id && c.amount > 0n));
        count(ownTaxes.length > 0 ? 'credit note: of a taxed line' : model.taxes.length > 0 ? 'credit note: of an untaxed line on a taxed invoice' : 'credit note: no taxes');
        const off = noteTax - expectedTax < 0n ? expectedTax - noteTax : noteTax - expectedTax;
        if (ownTaxes.length === 0 ? noteTax !== 0n : off > (changesOnInvoice ? BigInt(ownTaxes.length) : 0n)) {
          problems.push(`credit note ${note.id}: tax ${note.taxTotal} on ${fromMinor(credited, model.minor)} of ${showLine(line)}, its own taxes (${ownTaxes.map((t) => `${t.rate} %`).join(', ') || 'none'}) come to ${fromMinor(expectedTax, model.minor)}`);
        }
        if (toMinor(note.subtotal, model.minor) !== credited || toMinor(note.total, model.minor) !== credited + noteTax) problems.push(`credit note ${note.id}: subtotal ${note.subtotal}, tax ${note.taxTotal}, total ${note.total}`);
      } else if (outcome.error.kind === 'conflict') {
        // Refused only when those units may be more than what is left of what the line was paid, or, with
        // their taxes, than what is left of the invoice's total (a plan change's credit may have taken it),
        // or when the customer's credit paid part of the unpaid invoice (it owes less than its total then).
        const paidByCredit = toMinor(invoice.creditsApplied, model.minor) > 0n;
        if (already + atMost <= low && atMost + taxAtMost <= leftInTotal && !paidByCredit) problems.push(`credit of ${quantity.toFixed()} units (${fromMinor(atLeast, model.minor)}..${fromMinor(atMost, model.minor)}) refused with ${fromMinor(low - already, model.minor)} at least left: ${describeOutcome(outcome)}`);
      } else if (!(outcome.error.kind === 'validation' && atLeast <= 0n)) {
        problems.push(`credit of ${quantity.toFixed()} units: ${describeOutcome(outcome)}`);
      }
      fail(problems);
    } else if (s.kind === 'change') {
      // From the contract plan that serves now (the latest) to the other plan, as the contract workflow's step does.
      const cp = model.contractPlans.find((candidate) => candidate.cut === null)!;
      const day = clock + s.offset;
      // Maybe the drafts raised first, as the refusal of a change over a draft's fees asks.
      if (s.raiseFirst) for (const invoice of (await invoicesOf(contract)).filter((candidate) => candidate.status === 'draft')) await raise(invoice.id);
      const to: PlanKey = cp.plan === 'A' ? 'B' : 'A';
      const charges = await ledger();
      const { credits, draft } = creditsOfChange(model, cp, day, charges, await invoicesOf(contract));
      // The last day the old plan's usage (or a fee in arrears) is invoiced through: the end of the latest period it was charged for.
      const o = oracle(model);
      const arrearsThrough = charges
        .filter((charge) => charge.contractPlanId === cp.id && model.items.some((item) => item.id === charge.planItemId && (item.metered || item.arrears)))
        .reduce((last, charge) => Math.max(last, Math.min(model.end ?? Infinity, o.periodOn(cp, dayOf(charge.from))[1])), -Infinity);
      const planChangeId = newId('pch');
      const outcome = await outcomeOf(() =>
        createPlanChangeLifecycleService(db).changePlan({ organisationId, contractId: contract.contractId, planChangeId, fromContractPlanId: cp.id, toPlanId: to === 'A' ? contract.planId : contract.otherPlanId, effectiveDate: isoOf(day), prorate: true }),
      );
      trace.push(`change ${cp.id} (${cp.plan}) to ${to} from ${isoOf(day)} (usage invoiced through ${showDay(arrearsThrough)}${draft ? ', a draft billed fees given up' : ''}): ${describeOutcome(outcome)}`);
      if (day <= cp.start) {
        count('plan change: refused, not after the plan starts');
        expectAnswer(outcome, `validation: must be after the contract plan's start ${isoOf(cp.start)}`);
        continue;
      }
      if (model.end !== null && day > model.end) {
        count('plan change: refused, after the end');
        // The contract plan ends with the contract, or on its own first day if the contract ended before it.
        expectAnswer(outcome, new RegExp(`^validation: (the contract plan ends on ${isoOf(Math.max(model.end, cp.start))}: a change takes effect by then|must not be after the contract's end ${isoOf(model.end)})$`));
        continue;
      }
      if (day <= arrearsThrough) {
        count('plan change: refused, usage invoiced');
        expectAnswer(outcome, `conflict: the plan's usage is invoiced through ${isoOf(arrearsThrough)}: a change can take effect from ${isoOf(arrearsThrough + 1)}`);
        continue;
      }
      if (draft) {
        count('plan change: refused, fees on a draft');
        expectAnswer(outcome, /^conflict: invoice \S+ billed the plan's fee for days the change gives up and is still a draft: raise it first$/);
        continue;
      }
      expectAnswer(outcome, 'ok');
      const change = 'ok' in outcome ? outcome.ok : undefined!;
      count(`plan change: ok${credits.some((credit) => credit.amount > 0n) ? ', with credits' : ''}`);
      trace.push(`  ${change.id}: new contract plan ${change.toContractPlanId}, credits ${JSON.stringify(change.credits.map((c) => [c.invoiceItemId, c.from, c.to, c.amount]))}`);
      // The credits the change answers: the model's, within a minor unit where coupons make a share of them.
      const problems: Problems = [];
      const answered = change.credits.map((credit) => ({ ...credit, minor: toMinor(credit.amount, model.minor) }));
      for (const credit of credits.filter((candidate) => candidate.amount > 0n)) {
        const got = answered.find((candidate) => candidate.invoiceItemId === credit.invoiceItemId);
        const off = got === undefined ? Infinity : Math.abs(Number(got.minor - credit.amount));
        if (!got || got.from !== isoOf(credit.from) || got.to !== isoOf(credit.to) || off > 1) {
          problems.push(`plan change ${change.id}: credits ${got ? `${got.from}..${got.to} ${got.amount}` : 'nothing'} for ${credit.invoiceItemId}, the model ${isoOf(credit.from)}..${isoOf(credit.to)} ${fromMinor(credit.amount, model.minor)}`);
        } else credit.amount = got.minor;
      }
      for (const got of answered) if (!credits.some((credit) => credit.amount > 0n && credit.invoiceItemId === got.invoiceItemId)) problems.push(`plan change ${change.id}: credits ${got.amount} for ${got.invoiceItemId}, which the model gives nothing back`);
      fail(problems);
      const added: ModelContractPlan = { id: change.toContractPlanId!, plan: to, start: day, cut: null };
      cp.cut = day - 1;
      model.contractPlans.push(added);
      contract.contractPlanIds.push(added.id);
      model.changes.push({ id: change.id, from: cp, to: added, day, settledBy: null, credits });
      for (const credit of credits) if (credit.amount > 0n) changeCreditedOn.add(credit.invoiceId);
    } else if (s.kind === 'undo') {
      // The latest change that stands, or the one before it (if there is one).
      const latest = model.changes.at(-1);
      const change = s.earlier ? (model.changes.at(-2) ?? latest) : latest;
      if (!latest || !change) continue;
      const outcome = await outcomeOf(() => createPlanChangeLifecycleService(db).undoPlanChange({ organisationId, contractId: contract.contractId, planChangeId: change.id }));
      trace.push(`undo ${change.id}${change === latest ? '' : ' (not the latest)'}${change.settledBy ? `, settled by ${change.settledBy}` : ''}: ${describeOutcome(outcome)}`);
      if (change.settledBy !== null) {
        count('undo: refused, settled');
        const by = change.settledBy === TO_BALANCE ? "the change was credited to the customer's credit balance" : `invoice ${change.settledBy} has credited the change`;
        expectAnswer(outcome, `conflict: ${by}: change the plan again instead`);
        continue;
      }
      if (change !== latest) {
        count('undo: refused, not the latest');
        expectAnswer(outcome, `conflict: plan change ${latest.id} was made after this one: undo it first`);
        continue;
      }
      count('undo: ok');
      expectAnswer(outcome, 'ok');
      model.changes.pop();
      model.contractPlans.splice(model.contractPlans.indexOf(change.to), 1);
      change.from.cut = null;
      // Put back: the old plan's days from the change on, charged before it, count again; the new plan billed nothing.
      const problems: Problems = [];
      const charges = await ledger();
      if (charges.some((charge) => charge.contractPlanId === change.to.id)) problems.push(`undo ${change.id}: the removed contract plan ${change.to.id} has charges`);
      checkLedger(model, charges, { date: latestRun, afterRun: false, fresh: new Set() }, problems);
      fail(problems);
    }
  }

  // The contract ends (where it did not), and a last run far past its end bills everything left.
  if (model.end === null) {
    const end = Math.max(model.clock + 30, lastCharged(await ledger()));
    await services.contracts.update(organisationId, contract.contractId, { endDate: isoOf(end) });
    model.end = end;
    trace.push(`end ${isoOf(end)}`);
  }
  model.clock = Math.max(model.clock, model.end + 400);
  await run(model.clock);

  // Credit notes: no line credited beyond what it was paid, none beyond the invoice.
  const problems: Problems = [];
  for (const invoice of (await invoicesOf(contract)).filter((candidate) => candidate.status === 'raised')) {
    const soFar = await db('credit_note_items as i').join('credit_notes as n', 'n.id', 'i.credit_note_id').where({ 'n.invoice_id': invoice.id }).whereNot({ 'n.status': 'voided' }).select<Array<{ invoice_item_id: string; amount: string }>>('i.invoice_item_id', 'i.amount');
    for (const line of invoice.items) {
      const credited = sumMinor(soFar.filter((row) => row.invoice_item_id === line.id).map((row) => toMinor(row.amount, model.minor)));
      if (credited !== (model.credited.get(line.id) ?? 0n)) problems.push(`line ${line.id}: ${fromMinor(credited, model.minor)} credited in Postgres, the notes answered ${fromMinor(model.credited.get(line.id) ?? 0n, model.minor)}`);
      if (credited > 0n && credited > creditableBounds(model, invoice, line.id)[1]) problems.push(`line ${line.id}: credited ${fromMinor(credited, model.minor)}, more than it was paid`);
    }
    const all = sumMinor(soFar.map((row) => toMinor(row.amount, model.minor)));
    if (all > 0n && all > toMinor(invoice.total ?? '0', model.minor)) problems.push(`invoice ${invoice.id}: credited ${fromMinor(all, model.minor)} of ${invoice.total}`);
  }
  fail(problems);
}

const run = (advance: number) => ({ kind: 'run' as const, advance, raise: false });
const usage = (back: number, units: number) => ({ kind: 'usage' as const, back, units });
const JANUARY_2025 = dayOf('2025-01-01');
/** The second plan and the taxes of the cases written out before plan changes and taxes were played: a monthly fee, no taxes. */
const SECOND = { other: { kind: 'monthly' as const, fee: 3_000, arrears: false, unitPrice: '0.5' as const }, taxes: [] };

/**
 * Histories the property found that the services get wrong (shrunk, then written out): each is played as a
 * case of its own, so that it fails by name until the services are mended, and stays as a regression test.
 */
const FOUND: Array<[string, History]> = [
  [
    // A change from 2 January, then the contract ends on 1 January: the new plan never starts, and the run
    // makes no invoice. The run is after the contract's last day and the change is in force by its date, so
    // the run settles it to the balance (here with nothing to give), rather than leave it pending for an
    // invoice that will never come.
    'when a run after the contract ended makes no invoice for it, then it settles a change in force to the credit balance',
    {
      currency: 'JPY',
      anchor: 'calendar',
      kind: 'monthly',
      start: JANUARY_2025,
      end: null,
      fee: 1,
      arrears: false,
      unitPrice: '0.01',
      other: { kind: 'monthly', fee: 1, arrears: false, unitPrice: '0.01' },
      taxes: [],
      steps: [{ kind: 'removeItem', which: 1, offset: 0 }, { kind: 'change', offset: 1, raiseFirst: false }, { kind: 'removeItem', which: 0, offset: 0 }, { kind: 'credit', invoice: 0, line: 0, quarters: 1, byAmount: false }, { kind: 'end', offset: 0 }],
    },
  ],
  [
    // A yearly contract ends on its first day, which is charged; the end is removed, so that day joins the
    // year's window, and a unit for it arrives late. The run in April leaves the unit to the year's window,
    // which is not over (the model once wanted it charged in the one-day window); the last run charges it once.
    'when an end is removed after its cut window was charged, then late usage of that window waits for the window of the terms as they stand',
    { currency: 'JPY', anchor: 'calendar', kind: 'yearly', start: JANUARY_2025, end: 0, fee: 1, arrears: false, unitPrice: '0.01', other: { kind: 'monthly', fee: 1, arrears: false, unitPrice: '0.01' }, taxes: [], steps: [run(17), run(20), run(29), { kind: 'end', offset: null }, usage(66, 1), run(33)] },
  ],
  [
    // Usage of 1–10 January is charged on 11 January while the contract ends on the 10th; the end then moves
    // later, and the run of 1 February charges the window of 1–31 January in full: the 100 units twice.
    'when an end date moves later after the usage of its last, cut window was charged, then that usage is not charged again',
    { currency: 'USD', anchor: 'calendar', kind: 'monthly', start: JANUARY_2025, end: 9, fee: 10_000, arrears: false, unitPrice: '0.5', ...SECOND, steps: [usage(-4, 100), run(10), { kind: 'end', offset: null }, run(21)] },
  ],
  [
    // The metered item is removed from 11 January, so 1–10 January's usage is charged on the 12th; removed
    // again from 11 February, it was put back in force through 10 February and the 1–31 January window
    // charged in full. A second removal is refused now.
    'when an item removed already is removed from a later day, then it is refused and the usage of its window is not charged again',
    { currency: 'USD', anchor: 'calendar', kind: 'monthly', start: JANUARY_2025, end: null, fee: 10_000, arrears: false, unitPrice: '2', ...SECOND, steps: [usage(-3, 5), { kind: 'removeItem', which: 1, offset: 10 }, run(11), { kind: 'removeItem', which: 1, offset: 30 }, run(30)] },
  ],
  [
    // Two coupons of 10.00 off, once, on a 15.00 fee: each takes 10.00 off the lines the run priced, and the
    // invoice's total is -5.00.
    'when two amount coupons serve the same invoice, then together they take no more off a plan item than its lines charge',
    {
      currency: 'USD',
      anchor: 'calendar',
      kind: 'monthly',
      start: JANUARY_2025,
      end: 30,
      fee: 1_500,
      arrears: false,
      unitPrice: '2',
      ...SECOND,
      steps: [
        { kind: 'coupon', percentOff: null, amountOff: 1_000, duration: 'once', periods: 1 },
        { kind: 'coupon', percentOff: null, amountOff: 1_000, duration: 'once', periods: 1 },
        run(0),
      ],
    },
  ],
  [
    // A change from 11 January while the contract ends on 31 January; the end moves to 1 April, the new
    // contract plan's end with it, and the change is undone: the old plan got back its end of 31 January,
    // and February and March were billed by no plan.
    'when the contract end moves after a plan change and the change is undone, then the old plan serves through the new end',
    {
      currency: 'USD',
      anchor: 'calendar',
      kind: 'monthly',
      start: JANUARY_2025,
      end: 30,
      fee: 10_000,
      arrears: false,
      unitPrice: '2',
      ...SECOND,
      steps: [{ kind: 'change', offset: 10, raiseFirst: false }, { kind: 'end', offset: 90 }, { kind: 'undo', earlier: false }, run(60)],
    },
  ],
  [
    // A change from 2 January; the contract's end moves to 1 January, the old plan's last day, and back to
    // open: the old plan moved back with it and charged January whole, while the new plan, kept at its first
    // day, billed nothing.
    'when the contract end moves onto the day before a plan change and back, then the old plan keeps its end and the new plan serves from the change',
    {
      currency: 'USD',
      anchor: 'calendar',
      kind: 'monthly',
      start: JANUARY_2025,
      end: null,
      fee: 10_000,
      arrears: false,
      unitPrice: '2',
      ...SECOND,
      steps: [{ kind: 'change', offset: 1, raiseFirst: false }, { kind: 'end', offset: 0 }, { kind: 'end', offset: null }, run(0)],
    },
  ],
  [
    // Monthly, quarterly from 2 January: the run of 1 February bills 1 January alone and 2 January to
    // 31 March, both lines in the quarter 1 January to 31 March. A change from 1 February took the first
    // line of the item in that quarter (1 January) for the one to credit, so it found nothing given up: the
    // draft did not stop it, and once raised the fee of February and March was never credited.
    'when a billing-period change cut the period of a fee billed in advance, then a plan change credits the line that charged the days it gives up',
    {
      currency: 'USD',
      anchor: 'calendar',
      kind: 'monthly',
      start: JANUARY_2025,
      end: 0,
      fee: 10_000,
      arrears: false,
      unitPrice: '2',
      ...SECOND,
      steps: [
        { kind: 'period', to: 'quarterly', offset: 1 },
        { kind: 'end', offset: null },
        run(31),
        { kind: 'change', offset: 0, raiseFirst: false },
        { kind: 'change', offset: 0, raiseFirst: true },
        run(0),
      ],
    },
  ],
  [
    // A billing-period change on the second day cut the first quarter: its fee is billed as two lines of
    // one period (the first day, then the rest). A plan change from that second day once matched no line
    // for the period's two runs together, and so neither waited for the draft nor credited the raised one.
    'when a billing-period change cut a quarter into two lines of one invoice, then a plan change waits for the draft, and credits the line of the days it gives up once raised',
    {
      currency: 'JPY',
      anchor: 'calendar',
      kind: 'quarterly',
      start: JANUARY_2025,
      end: null,
      fee: 1_000,
      arrears: false,
      unitPrice: '0.01',
      other: { kind: 'monthly', fee: 1, arrears: false, unitPrice: '0.01' },
      taxes: [],
      steps: [
        { kind: 'removeItem', which: 1, offset: 0 },
        { kind: 'period', to: 'quarterly', offset: 1 },
        run(1),
        { kind: 'change', offset: 0, raiseFirst: false },
        { kind: 'change', offset: 0, raiseFirst: true },
        run(40),
      ],
    },
  ],
  [
    // The old plan's taxed fee given back by a change makes the next invoice's tax negative (-1 JPY); a
    // quarter of the new, untaxed fee was then credited with that -1 of tax: nothing, and refused.
    'when a plan change gave back more tax than the next invoice owes, then a note of its untaxed fee credits the fee with no tax',
    {
      currency: 'JPY',
      anchor: 'calendar',
      kind: 'monthly',
      start: JANUARY_2025,
      end: null,
      fee: 3,
      arrears: false,
      unitPrice: '0.01',
      other: { kind: 'monthly', fee: 3, arrears: false, unitPrice: '0.01' },
      taxes: [{ rate: '19.6', on: 'fee' }],
      steps: [run(1), { kind: 'change', offset: 0, raiseFirst: true }, run(30), { kind: 'raise' }, { kind: 'credit', invoice: 1, line: 0, quarters: 1, byAmount: false }],
    },
  ],
  [
    // The change's invoice gives back the old fee (-6 JPY) and its 8.875 % (-1), and charges the new fee with
    // 19.6 % on all (+1): its tax is nothing. Half of the new fee's first month is credited: 19.6 % of 3 is 1,
    // but no tax is left to credit. The oracle once counted the untouched tax line at its -1 before the note
    // and wanted 1 of tax credited, more than the invoice's tax.
    'when a plan change left one tax line below nothing, then a note of the new fee credits no more tax than the invoice has left',
    {
      currency: 'JPY',
      anchor: 'calendar',
      kind: 'monthly',
      start: JANUARY_2025,
      end: null,
      fee: 6,
      arrears: false,
      unitPrice: '0.01',
      other: { kind: 'monthly', fee: 5, arrears: false, unitPrice: '0.01' },
      taxes: [
        { rate: '8.875', on: 'fee' },
        { rate: '19.6', on: 'all' },
      ],
      steps: [
        run(11),
        run(48),
        { kind: 'change', offset: 1, raiseFirst: true },
        run(31),
        { kind: 'raise' },
        { kind: 'addItem', offset: 0, metered: false, fee: 1, extraDecimals: 0, quantity: null, arrears: false, graduated: false, upTo: 10, price: '0.01', over: '0.01' },
        { kind: 'sync' },
        { kind: 'credit', invoice: 8, line: 0, quarters: 2, byAmount: false },
      ],
    },
  ],
  [
    // The change's invoice gives back the old, taxed fee (-2 JPY, and -1 of its 25 %) and charges the new,
    // untaxed fee for four days: subtotal 2, tax -1, total 1. A credit of the whole 1 by amount split it into
    // 2 of net and -1 of tax, which the credit note's own check refused.
    'when a plan change left the next invoice\'s tax below nothing, then a credit by amount is all net, with no tax',
    {
      currency: 'JPY',
      anchor: 'calendar',
      kind: 'monthly',
      start: JANUARY_2025,
      end: null,
      fee: 2,
      arrears: false,
      unitPrice: '0.01',
      other: { kind: 'monthly', fee: 1, arrears: false, unitPrice: '0.01' },
      taxes: [{ rate: '25', on: 'fee' }],
      steps: [
        { kind: 'run', advance: 0, raise: true },
        { kind: 'change', offset: 1, raiseFirst: false },
        { kind: 'suspend', advance: 16, days: 1 },
        { kind: 'credit', invoice: 0, line: 0, quarters: 1, byAmount: false },
        { kind: 'run', advance: 74, raise: true },
        { kind: 'credit', invoice: 2, line: 0, quarters: 4, byAmount: true },
      ],
    },
  ],
  [
    // A credit note of part of February's fee while a plan change's credit for March's fee stood on the same
    // invoice rounded its tax (19.6 % on all) with that credit counted; the change is undone and a second
    // note of as much settles the minor unit: 30406 and 30404 JPY, together the rate on both, rounded once.
    'when a credit note was issued beside a plan change that is undone since, then the next note settles the tax rounding',
    {
      currency: 'JPY', anchor: 'calendar', kind: 'monthly', start: 20089, end: null, fee: 620512, arrears: false, unitPrice: '0.01', other: { kind: 'monthly', fee: 1, arrears: false, unitPrice: '0.01' }, taxes: [{ rate: '19.6', on: 'all' }],
      steps: [
        { kind: 'run', advance: 13, raise: false },
        { kind: 'run', advance: 49, raise: true },
        { kind: 'change', offset: 1, raiseFirst: false },
        { kind: 'credit', invoice: 0, line: 0, quarters: 1, byAmount: false },
        { kind: 'undo', earlier: false },
        { kind: 'credit', invoice: 0, line: 0, quarters: 1, byAmount: false },
        { kind: 'run', advance: 0, raise: false },
        { kind: 'removeItem', which: 0, offset: 0 },
        { kind: 'run', advance: 0, raise: false },
      ],
    } as History,
  ],
];

/** Histories that once failed, run first every time. */
const PINNED_HISTORIES: Array<[History]> = [
  // A once coupon discounts the first two days of a contract that ends on the second; the end is removed,
  // and the draft, synced, prices the whole month outside its days: its fee line goes, and its discount
  // went on taking 1 JPY off nothing, leaving the invoice at -1.
  [
    {
      currency: 'JPY', anchor: 'calendar', kind: 'monthly', start: 20089, end: 1, fee: 8, arrears: false, unitPrice: '0.01', other: { kind: 'monthly', fee: 1, arrears: false, unitPrice: '0.01' }, taxes: [],
      steps: [
        { kind: 'coupon', percentOff: null, amountOff: 1, duration: 'once', periods: 1 },
        { kind: 'run', advance: 0, raise: false },
        { kind: 'end', offset: null },
        { kind: 'sync' },
        { kind: 'credit', invoice: 0, line: 0, quarters: 1, byAmount: false },
        { kind: 'addItem', offset: 0, metered: false, fee: 1, extraDecimals: 0, quantity: null, arrears: false, graduated: false, upTo: 10, price: '0.01', over: '0.01' },
      ],
    } as History,
  ],
  // A quarterly contract turns monthly the day after it starts: the quarter's one day (its fee rounds to
  // 0 JPY) comes before January, so a once coupon serves that day and takes nothing off January.
  [
    {
      currency: 'JPY', anchor: 'calendar', kind: 'quarterly', start: 20089, end: null, fee: 1, arrears: false, unitPrice: '0.01', other: { kind: 'monthly', fee: 1, arrears: false, unitPrice: '0.01' }, taxes: [],
      steps: [
        { kind: 'period', to: 'monthly', offset: 1 },
        { kind: 'coupon', percentOff: null, amountOff: 1, duration: 'once', periods: 1 },
        { kind: 'removeItem', which: 1, offset: 0 },
        { kind: 'credit', invoice: 0, line: 0, quarters: 1, byAmount: false },
        { kind: 'end', offset: null },
      ],
    } as History,
  ],
  // A once coupon where a monthly contract turns quarterly the day after it starts: the month and the
  // quarter begin on the same day and are two periods, so the coupon serves the month's one day.
  [
    {
      currency: 'JPY', anchor: 'calendar', kind: 'monthly', start: 20089, end: null, fee: 1, arrears: false, unitPrice: '0.01', other: { kind: 'monthly', fee: 1, arrears: false, unitPrice: '0.01' }, taxes: [],
      steps: [
        { kind: 'period', to: 'quarterly', offset: 1 },
        { kind: 'coupon', percentOff: null, amountOff: 1, duration: 'once', periods: 1 },
        { kind: 'usage', back: 0, units: 1 },
        { kind: 'addItem', offset: 0, metered: false, fee: 1, extraDecimals: 0, quantity: null, arrears: false, graduated: false, upTo: 10, price: '0.01', over: '0.01' },
        { kind: 'addItem', offset: 0, metered: false, fee: 1, extraDecimals: 0, quantity: '2.5', arrears: false, graduated: false, upTo: 10, price: '0.01', over: '0.01' },
      ],
    } as History,
  ],
];

describe('billing model: random histories through the services over Postgres, against a day-by-day oracle', () => {
  it.each(FOUND)('%s', async (_, found) => {
    await play(found);
  });

  it('every fee day is charged once at the terms in force, every usage unit once, on each contract plan; plan changes credit the days given up and undo puts them back; lines match the ledger, runs their lines, invoices their taxes, coupons and credit notes what was paid', async () => {
    const seed = process.env.BILLING_MODEL_SEED === undefined ? undefined : Number(process.env.BILLING_MODEL_SEED);
    const example = process.env.BILLING_MODEL_EXAMPLE ? (JSON.parse(process.env.BILLING_MODEL_EXAMPLE) as [History]) : undefined;
    await fc.assert(
      fc.asyncProperty(history, (h) => play(h)),
      {
        numRuns: Number(process.env.BILLING_MODEL_RUNS ?? (process.env.CI ? 350 : 50)),
        ...shrinkWithin(900_000),
        ...(seed === undefined ? {} : { seed }),
        ...(process.env.BILLING_MODEL_PATH ? { path: process.env.BILLING_MODEL_PATH } : {}),
        examples: [...(example ? [example] : []), ...PINNED_HISTORIES],
      },
    );
  }, 900_000);
});
