import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { atLeastOne, decimal, isoCurrency, isoDate, ordered, reference, text, timestamps } from '../../http/schemas';
import { CONTRACT_STATES } from '../../domain/contract-state';
import { Decimal } from '../../domain/money';


const customerEntityIds = z
  .array(reference())
  .min(1)
  .max(100)
  .describe("the customer entities whose usage the plan bills (default: all the customer's); two active contract plans never bill one entity's usage of one meter on the same day");

const contractPlanInput = ordered(
  z.object({ planId: reference(), startDate: isoDate.optional(), endDate: isoDate.optional().describe('not before startDate'), customerEntityIds: customerEntityIds.optional() }),
  'startDate',
  'endDate',
);

export const billingAnchor = z.enum(['calendar', 'anniversary']);

/** At most this many thresholds per contract. */
export const MAX_PROGRESSIVE_THRESHOLDS = 20;

/** Thresholds are stored as NUMERIC(24,4); the contract's currency may allow fewer decimals (checked by the service). */
export const progressiveBillingInput = z
  .object({
    thresholds: z
      .array(decimal({ precision: 24, scale: 4, sign: 'positive' }))
      .min(1)
      .max(MAX_PROGRESSIVE_THRESHOLDS)
      .refine((thresholds) => thresholds.every((threshold, index) => index === 0 || new Decimal(threshold).gt(thresholds[index - 1]!)), { message: 'must be strictly increasing' })
      .describe("cumulative usage charges of a billing period, before tax, in the contract's currency (at most its decimals), strictly increasing: each crossed is invoiced at once"),
  })
  .describe('progressive billing: an invoice of the usage charged so far whenever the period\'s usage charges cross a threshold');

export const createContractBody = ordered(
  z.object({
    customerId: reference(),
    name: text(200).optional(),
    currency: isoCurrency,
    startDate: isoDate,
    endDate: isoDate.optional().describe('not before startDate'),
    billingAnchor: billingAnchor.optional().describe("calendar (default): periods are calendar months, quarters or years; anniversary: they start on each contract plan's start date"),
    plans: z.array(contractPlanInput).min(1).max(50),
    progressiveBilling: progressiveBillingInput.optional(),
  }),
  'startDate',
  'endDate',
);

export const updateContractBody = atLeastOne({
  name: text(200).optional(),
  endDate: isoDate.nullable().optional().describe("not before the contract's startDate; null: open-ended"),
  progressiveBilling: progressiveBillingInput.nullable().optional().describe('null: off'),
});

export const contractListQuery = pageQuery.extend({ customerId: reference().optional(), status: z.enum(CONTRACT_STATES).optional() });

export const contractPlanSchema = z.object({
  id: z.string().describe('the contractPlanId'),
  planId: z.string(),
  startDate: isoDate,
  endDate: isoDate.nullable(),
  customerEntityIds: z.array(z.string()).nullable().describe("the customer entities whose usage it bills; null: all the customer's"),
});

export const contractSchema = z.object({
  id: z.string(),
  customerId: z.string(),
  name: z.string().nullable(),
  currency: z.string(),
  status: z.enum(CONTRACT_STATES),
  startDate: isoDate,
  endDate: isoDate.nullable(),
  billingAnchor,
  plans: z.array(contractPlanSchema),
  progressiveBilling: z.object({ thresholds: z.array(z.string()) }).nullable().describe('the usage thresholds invoiced as they are crossed; null: off'),
  ...timestamps,
});

/** contract_milestones.amount is NUMERIC(24,4), .percentage NUMERIC(9,6); a milestone has exactly one of them. */
export const createMilestoneBody = z
  .object({
    planItemId: reference(),
    name: text(200),
    amount: decimal({ precision: 24, scale: 4, sign: 'positive' }).optional(),
    percentage: decimal({ precision: 9, scale: 6, sign: 'positive', max: 100 }).optional().describe('of the plan item, in (0, 100]'),
    dueDate: isoDate.optional(),
  })
  .refine((body) => (body.amount === undefined) !== (body.percentage === undefined), { message: 'give exactly one of amount and percentage', path: ['amount'] })
  // Exactly one alternative holds: both fields given match both, and neither given matches none.
  .meta({ oneOf: [{ required: ['amount'] }, { required: ['percentage'] }] });

export const milestoneSchema = z.object({
  id: z.string(),
  contractId: z.string(),
  contractPlanId: z.string(),
  planItemId: z.string(),
  name: z.string(),
  amount: z.string().nullable(),
  percentage: z.string().nullable(),
  dueDate: isoDate.nullable(),
  achievedAt: z.string().nullable(),
  invoiceId: z.string().nullable(),
  ...timestamps,
});

/** contract_taxes.rate is NUMERIC(9,6), a percentage. */
export const taxBody = z.object({
  name: text(200),
  rate: decimal({ precision: 9, scale: 6, sign: 'nonNegative', max: 100 }).describe('a percentage from 0 to 100, at most 6 decimals'),
  appliesTo: z.union([z.literal('all'), z.array(reference()).min(1).max(100)]).default('all').describe("'all', or the plan item ids it applies to"),
  effectiveDate: isoDate
    .optional()
    .describe(
      "the first day the tax (or this version of it) is in force for the lines whose first day is that day or later; after every day the contract's ledger has charged (409 otherwise). Absent: the day after the last day charged, or from the contract's start when nothing is charged yet",
    ),
});

const taxVersionSchema = z.object({
  effectiveFrom: z.string().nullable().describe("the first day this version is in force; null: from the contract's start"),
  name: z.string(),
  rate: z.string(),
  appliesTo: z.union([z.literal('all'), z.array(z.string())]),
});

export const taxSchema = z.object({
  id: z.string(),
  contractId: z.string(),
  ...taxVersionSchema.shape,
  versions: z.array(taxVersionSchema).describe('every version of the tax line, in the order they take effect: the fields above are the last'),
  ...timestamps,
});

export const planChangeBody = z.object({
  fromContractPlanId: reference().describe('the contract plan to end: one of the contract’s plans that still serves on the effective date'),
  toPlanId: reference().describe('the billing plan that takes over, in the contract’s currency'),
  effectiveDate: z
    .union([isoDate, z.literal('period_end')])
    .describe('the first day on the new plan (the old one ends the day before), or "period_end": the day after the old plan’s current billing period'),
  prorate: z
    .boolean()
    .default(true)
    .describe(
      'true (default): the old plan’s in-advance fees already billed for days from the effective date on are credited, by the day. false: the change must start a billing period of the old plan, so that nothing is prorated',
    ),
});

export const planChangeCreditSchema = z.object({
  planItemId: z.string(),
  title: z.string(),
  invoiceId: z.string().describe('the invoice that billed the fee'),
  invoiceItemId: z.string(),
  periodFrom: z.string(),
  periodTo: z.string(),
  from: isoDate.describe('the first day credited'),
  to: isoDate.describe('the last day credited'),
  days: z.number().int(),
  periodDays: z.number().int(),
  amount: z.string(),
});

export const planChangeSchema = z.object({
  id: z.string(),
  contractId: z.string(),
  fromContractPlanId: z.string().nullable().describe('the contract plan the change ended; null once an earlier change that had created it is undone'),
  toContractPlanId: z.string().nullable().describe('the contract plan the change created; null once undone'),
  toPlanId: z.string(),
  effectiveDate: isoDate,
  prorate: z.boolean(),
  status: z.enum(['pending', 'settled', 'undone']).describe('pending until the next invoice of the contract credits it, or, once the contract has ended, a run after its end and on or after the change’s effective date that makes no invoice for it credits it to the balance; only a pending change can be undone'),
  credits: z.array(planChangeCreditSchema).describe('the old plan’s in-advance fees that the days from the change on had paid for'),
  settledInvoiceId: z.string().nullable().describe('the invoice whose lines credit the change; null while pending, or when a run after the contract’s end, with no invoice for it, credited it whole to the balance'),
  creditedToBalance: z.string().nullable().describe('what did not fit on that invoice (or, without one, the whole credit), with its taxes, added to the customer’s credit balance'),
  settledAt: z.string().nullable(),
  undoneAt: z.string().nullable(),
  ...timestamps,
});

export const planChangeParams = z.object({ id: reference(), planChangeId: reference() });
