import { z } from 'zod';
import { MAX_THRESHOLDS } from '../../domain/alerts';
import { toDecimal } from '../../domain/money';
import { pageQuery } from '../../http/paging';
import { atLeastOne, decimal, isoCurrency, reference, text, timestamps } from '../../http/schemas';

/** alerts.thresholds holds NUMERIC(24,4) values. */
const threshold = decimal({ precision: 24, scale: 4, sign: 'positive' });

const thresholds = z
  .array(threshold)
  .min(1)
  .max(MAX_THRESHOLDS)
  .superRefine((values, ctx) => {
    for (let index = 1; index < values.length; index++) {
      if (!toDecimal(values[index]!).greaterThan(toDecimal(values[index - 1]!))) ctx.addIssue({ code: 'custom', path: [index], message: 'thresholds must be strictly increasing' });
    }
  })
  .describe(`1 to ${MAX_THRESHOLDS} positive decimals, strictly increasing; each fires once (per period when the alert recurs)`);

const metric = z.enum(['usage', 'spend', 'credit_balance']).describe("usage: a meter's aggregate; spend: the period-to-date usage charges; credit_balance: the customer's credit balance (fires when it falls to a threshold or below)");
const recurring = z.enum(['period', 'never']).describe('period: each threshold fires again in every period; never: once, counting from the alert\'s creation');

export const createAlertBody = z
  .object({
    name: text(200),
    scope: z
      .object({ customerId: reference().optional(), contractId: reference().optional() })
      .refine((scope) => (scope.customerId === undefined) !== (scope.contractId === undefined), { message: 'give either customerId or contractId' })
      .describe("a customer, or a contract (its billing periods are the alert's periods)"),
    metric,
    meterId: reference().optional().describe('with usage, and only then: the meter whose aggregate is watched'),
    currency: isoCurrency.optional().describe("with spend and credit_balance, and only then; a spend alert on a contract takes the contract's currency when none is given"),
    thresholds,
    recurring,
  })
  .superRefine((body, ctx) => {
    if ((body.metric === 'usage') !== (body.meterId !== undefined)) ctx.addIssue({ code: 'custom', path: ['meterId'], message: 'is given with metric usage, and only then' });
    // A spend alert on a contract counts in the contract's currency, which it takes when none is given.
    const takesContracts = body.metric === 'spend' && body.scope.contractId !== undefined;
    if (body.metric === 'usage' && body.currency !== undefined) ctx.addIssue({ code: 'custom', path: ['currency'], message: 'is given with metric spend or credit_balance, and only then' });
    if (body.metric !== 'usage' && body.currency === undefined && !takesContracts) ctx.addIssue({ code: 'custom', path: ['currency'], message: `is required with metric ${body.metric}${body.metric === 'spend' ? " on a customer (one on a contract takes the contract's)" : ''}` });
  });

export type CreateAlertBody = z.output<typeof createAlertBody>;

export const updateAlertBody = atLeastOne({ name: text(200).optional(), thresholds: thresholds.optional() });

export type UpdateAlertBody = z.output<typeof updateAlertBody>;

export const alertSchema = z.object({
  id: z.string(),
  name: z.string(),
  scope: z.object({ customerId: z.string(), contractId: z.string().nullable() }).describe("the customer watched, and the contract when the alert is on one"),
  metric,
  meterId: z.string().nullable(),
  currency: z.string().nullable(),
  thresholds: z.array(z.string()),
  recurring,
  ...timestamps,
});

export type AlertView = z.infer<typeof alertSchema>;

export const alertTriggerSchema = z.object({
  id: z.string(),
  alertId: z.string(),
  threshold: z.string(),
  value: z.string().describe('the value that crossed the threshold'),
  periodStart: z.string().describe('the first instant of the period the value was counted in'),
  createdAt: z.string(),
});

export type AlertTriggerView = z.infer<typeof alertTriggerSchema>;

export const alertListQuery = pageQuery;

/** An alert's triggers have no text to search: `search` is refused rather than ignored. */
export const alertTriggerListQuery = pageQuery.omit({ search: true });
