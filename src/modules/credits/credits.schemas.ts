import { z } from 'zod';
import { pageOf, pageQuery } from '../../http/paging';
import { decimal, freeText, isoCurrency, isoDateTime } from '../../http/schemas';

export const CREDIT_ENTRY_KINDS = ['grant', 'purchase', 'consumption', 'expiry', 'credit_note', 'adjustment'] as const;
export type CreditEntryKind = (typeof CREDIT_ENTRY_KINDS)[number];

export const addCreditsBody = z.object({
  kind: z.enum(['grant', 'purchase']).default('grant').describe('grant (the default): given for free; purchase: prepaid credit the customer paid for'),
  amount: decimal({ precision: 24, scale: 4, sign: 'positive' }).describe("> 0, with no more decimals than the currency's minor unit"),
  currency: isoCurrency,
  reason: freeText(1000).describe('Why the credit is added, as finance will read it in the ledger'),
  expiresAt: isoDateTime.optional().describe('when what is left of this credit expires, at least a minute ahead; none: it never expires'),
});

export type AddCreditsBody = z.output<typeof addCreditsBody>;

export const creditsQuery = pageQuery.extend({ currency: isoCurrency.optional().describe('only the ledger entries of this currency') });

export const creditEntrySchema = z.object({
  id: z.string(),
  currency: z.string(),
  kind: z.enum(CREDIT_ENTRY_KINDS),
  amount: z.string().describe('signed: what the entry added to (or took from) the balance'),
  balanceAfter: z.string().describe('the balance once this entry was written'),
  reason: z.string().nullable(),
  creditNoteId: z.string().nullable(),
  invoiceId: z.string().nullable(),
  expiresAt: z.string().nullable().describe('on credit added: when what is left of it expires'),
  createdAt: z.string(),
});

export type CreditEntry = z.infer<typeof creditEntrySchema>;

export const creditsSchema = z.object({
  customerId: z.string(),
  balances: z.array(z.object({ currency: z.string(), balance: z.string() })).describe('one per currency the customer ever had credit in'),
  lots: z
    .array(z.object({ id: z.string(), currency: z.string(), amount: z.string(), remaining: z.string(), expiresAt: z.string().nullable() }))
    .describe('the credit added that is not spent yet, in the order invoices take it: the lot that expires first, first; lots that never expire, last'),
  ledger: pageOf(creditEntrySchema).describe('the entries, newest first'),
});

export type Credits = z.infer<typeof creditsSchema>;
