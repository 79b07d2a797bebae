import { z } from 'zod';
import { currencyMinorUnits } from '../../domain/currencies';
import { Decimal } from '../../domain/money';
import { pageQuery } from '../../http/paging';
import { atLeastOne, decimal, isoCurrency, queryInteger, reference, text, timestamps } from '../../http/schemas';

const provider = z.literal('stripe').describe('The gateway; Stripe is the one adapter today');

export const providerParam = z.object({ provider });
export const webhookParams = z.object({ organisationId: reference() });

/** Stripe's keys and secrets are letters, digits and underscores: anything else could not even travel in a header. */
const stripeKey = z
  .string()
  .min(8)
  .max(255)
  .regex(/^[A-Za-z0-9_]+$/, 'must be a Stripe key: letters, digits and underscores');

export const saveStripeAccountBody = z.object({
  secretKey: stripeKey.describe('A Stripe secret or restricted key (sk_… or rk_…); stored sealed, never read back'),
  webhookSecret: stripeKey.describe("The signing secret (whsec_…) of the webhook endpoint set up at Stripe for this organisation's URL"),
  collectOn: z.enum(['raised', 'sent']).optional().describe('When an invoice of a linked customer is charged: once raised (default) or once sent'),
});

export const providerAccountSchema = z.object({
  provider,
  secretKeyLast4: z.string(),
  webhookSecretSet: z.literal(true),
  collectOn: z.enum(['raised', 'sent']),
  ...timestamps,
});

export const linkCustomerBody = z.object({
  provider,
  providerCustomerId: text(255).optional().describe('An existing customer at the gateway (cus_…); without it, one is created there'),
});

const paymentMethodSchema = z.object({ brand: z.string().nullable(), last4: z.string().nullable() }).describe("The default payment method's brand and last digits only");

export const customerPaymentProviderSchema = z.object({
  customerId: z.string(),
  provider,
  providerCustomerId: z.string(),
  defaultPaymentMethod: paymentMethodSchema.nullable(),
  ...timestamps,
});

export const paymentAttemptSchema = z.object({
  id: z.string(),
  invoiceId: z.string(),
  customerId: z.string(),
  attempt: z.number().int().describe('1 for the first charge of the invoice, then one more per retry'),
  provider: z.string(),
  amount: z.string(),
  currency: z.string(),
  status: z.enum(['pending', 'processing', 'requires_action', 'succeeded', 'failed', 'refunded']),
  providerPaymentId: z.string().nullable().describe("The gateway's payment (a Stripe PaymentIntent id)"),
  actionUrl: z.string().nullable().describe("requires_action: the page where the customer completes the payment, when the gateway gives one (null when the action is for the gateway's own SDK)"),
  failure: z.object({ code: z.string(), message: z.string() }).nullable(),
  paymentId: z.string().nullable().describe('The payment recorded on the invoice when the attempt succeeded'),
  refundedAmount: z.string(),
  ...timestamps,
  completedAt: z.string().nullable(),
});

const minimumAmountDue = z
  .partialRecord(isoCurrency, decimal({ precision: 24, scale: 4, sign: 'nonNegative' }))
  .superRefine((amounts, ctx) => {
    // As every amount: no more decimals than its currency's minor unit.
    for (const [currency, amount] of Object.entries(amounts)) {
      const places = currencyMinorUnits(currency);
      if (amount !== undefined && new Decimal(amount).decimalPlaces() > places) ctx.addIssue({ code: 'custom', path: [currency], message: `must have at most ${places} decimal places in ${currency}` });
    }
  })
  .describe("Per currency: an invoice owing less is not tried again after a failure; no more decimals than the currency's minor unit");

export const createDunningCampaignBody = z.object({
  name: text(200),
  customerId: reference().optional().describe("The customer it applies to; without it, the organisation's campaign (a customer's own wins)"),
  maxAttempts: z.number().int().min(1).max(100).describe('Attempts in all, the first charge included'),
  daysBetweenAttempts: z.number().int().min(0).max(365),
  minimumAmountDue: minimumAmountDue.optional(),
});

export const updateDunningCampaignBody = atLeastOne({
  name: text(200).optional(),
  maxAttempts: z.number().int().min(1).max(100).optional(),
  daysBetweenAttempts: z.number().int().min(0).max(365).optional(),
  minimumAmountDue: minimumAmountDue.optional(),
});

export const dunningCampaignSchema = z.object({
  id: z.string(),
  customerId: z.string().nullable(),
  name: z.string(),
  maxAttempts: z.number().int(),
  daysBetweenAttempts: z.number().int(),
  minimumAmountDue: z.record(z.string(), z.string()),
  ...timestamps,
});

export const dunningCampaignListQuery = pageQuery.extend({ customerId: reference().optional() });

export const reconciliationQuery = z.object({
  refresh: z
    .enum(['true', 'false'])
    .default('false')
    .transform((value) => value === 'true')
    .describe('true: compare now instead of showing the latest report (the daily one, or the last one asked for)'),
  days: queryInteger(1, 90).default(3).describe('How many days back the gateway is read when comparing now'),
});

const sideSchema = z.object({ status: z.string(), amount: z.string(), currency: z.string() });

export const reconciliationSchema = z.object({
  provider,
  days: z.number().int(),
  checkedAt: z.string().describe('When the comparison was made'),
  differences: z.array(
    z.object({
      kind: z.enum(['missing_here', 'missing_at_gateway', 'status_differs', 'amount_differs', 'unrecorded_payment', 'refund_unbooked']),
      providerPaymentId: z.string().nullable(),
      attemptId: z.string().nullable(),
      invoiceId: z.string().nullable(),
      gateway: sideSchema.nullable(),
      ours: sideSchema.nullable(),
    }),
  ),
});

export const webhookReceiptSchema = z.object({ received: z.literal(true), duplicate: z.boolean() });
