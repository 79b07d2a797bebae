import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { withFormerNames } from '../../http/former-names';
import { isoDate, reference } from '../../http/schemas';
import { invoiceReferenceFields } from '../invoices';

/** Every field has a default, so the body itself may be left out. */
export const createRunBody = z
  .object({
    billingDate: isoDate.optional().describe("the day the run bills for (default: today in the organisation's time zone); at most 366 days ahead"),
    contractIds: z.array(reference()).min(1).max(10_000).optional().describe('bill only these contracts (default: every contract with something due)'),
    dryRun: z.boolean().optional().describe('compute every invoice the run would create and keep them in its result; store no invoice'),
    customerReference: invoiceReferenceFields.customerReference.optional().describe("set on every invoice the run makes: the customer's own reference, printed on it; 1 to 200 characters"),
    purchaseOrderNumber: invoiceReferenceFields.purchaseOrderNumber.optional().describe("set on every invoice the run makes: the customer's purchase order number, printed on it; 1 to 100 characters"),
  })
  .default({});

/** A line a run would make, as a dry run and the upcoming invoice show it. */
const plannedLineSchema = z.object({
  planItemId: z.string().optional(),
  title: z.string(),
  description: z.string().optional(),
  quantity: z.string(),
  price: z.string(),
  fromDate: isoDate,
  toDate: isoDate,
  dimensions: z.record(z.string(), z.string().nullable()).optional().describe('a usage line of a plan item priced per dimension value: the values it charges for'),
});

const runInvoiceSchema = z.object({
  invoiceId: z.string().nullable().describe('null in a dry run'),
  contractPlanId: z.string(),
  currency: z.string(),
  total: z.string().describe('the sum of the lines, before tax'),
  items: z.array(plannedLineSchema).optional().describe('a dry run: the lines the invoice would have'),
});

export const runSchema = z.object({
  id: z.string(),
  status: z.enum(['running', 'completed', 'failed']),
  billingDate: isoDate,
  dryRun: z.boolean(),
  scheduleId: z.string().nullable(),
  customerReference: z.string().nullable().describe('given to every invoice the run makes'),
  purchaseOrderNumber: z.string().nullable().describe('given to every invoice the run makes'),
  progress: z.object({ contracts: z.number().int(), done: z.number().int(), failed: z.number().int() }),
  invoicesCreated: z.number().int(),
  totals: z.array(z.object({ currency: z.string(), amount: z.string() })),
  failures: z.array(z.object({ contractId: z.string(), code: z.string(), message: z.string() })),
  invoices: z
    .array(runInvoiceSchema.extend({ contractId: z.string() }))
    .describe('a dry run: every invoice it would make, whole; empty for a real run, whose invoices GET /invoices?invoiceRunId= pages'),
  startedAt: z.string(),
  completedAt: z.string().nullable(),
});

export const runListQuery = pageQuery;

export const upcomingQuery = z.object({ date: isoDate.optional().describe("the billing date (default: today in the organisation's time zone); at most 366 days ahead") });

export const upcomingSchema = z.object({
  contractId: z.string(),
  billingDate: isoDate,
  invoices: z.array(
    z.object({
      contractPlanId: z.string(),
      currency: z.string(),
      fromDate: isoDate,
      toDate: isoDate,
      total: z.string(),
      items: z.array(plannedLineSchema),
    }),
  ),
});

export const currentUsageQuery = z.object({ date: isoDate.optional().describe("a day of the billing period to show (default: today in the organisation's time zone); at most 366 days ahead") });

const amount = z.string().describe('a decimal amount in the currency, before tax');

/** Fields of the current usage answer renamed to the naming rules (an instant ends in `At`): former name → name. */
export const CURRENT_USAGE_RENAMES = { asOf: 'calculatedAt' } as const;

export const currentUsageSchema = withFormerNames(z.object({
  contractId: z.string(),
  currency: z.string().describe("the contract's currency: every amount is in it"),
  date: isoDate.describe('the day whose billing period is shown'),
  calculatedAt: z.string().describe('the instant the usage was rated at: it counts the events ingested by then'),
  total: amount.describe("the period's usage charges so far, every contract plan together"),
  charged: amount.describe('what earlier documents already charged for those usage windows'),
  due: amount.describe('what an invoice made now would bill for them (the difference with what was charged)'),
  plans: z.array(
    z.object({
      contractPlanId: z.string(),
      currency: z.string(),
      periodStart: z.string().describe('the first day of the billing period that holds the date'),
      periodEnd: z.string().describe('its last day'),
      lines: z.array(
        z.object({
          planItemId: z.string(),
          name: z.string(),
          quantity: z.string().nullable().describe('the units rated (null where the charge states none)'),
          amount,
          dimensions: z.record(z.string(), z.string().nullable()).optional().describe('an item priced per dimension value: the values of the price entry'),
        }),
      ),
      total: amount.describe("the period's usage charges so far: what its windows rate to, whole"),
      charged: amount.describe('what earlier documents already charged for these windows'),
      due: amount.describe('what an invoice made now would bill for them'),
    }),
  ),
}), CURRENT_USAGE_RENAMES);

export type InvoiceRun = z.output<typeof runSchema>;
