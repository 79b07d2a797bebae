import type { Knex } from 'knex';
import { orNotFound } from '../../domain/errors';
import { addressLines, type PostalAddress } from '../../domain/document-locale';
import { Decimal } from '../../domain/money';
import { addressesIn, type Address, customersIn, entitiesIn, type EntityRow, type EntityType } from '../customers';
import { invoiceTemplatesIn } from '../invoice-templates';
import { getOrganisationSettings, type PaymentDetails } from '../organisation-settings';
import type { InvoiceDocument, InvoiceParty } from './invoice-pdf';
import { createInvoiceRepository } from './invoices.repository';

/**
 * What settles an invoice besides the customer's credit: its issued credit notes and its payments (refunds
 * included, negative). Payments and credit notes are modules above this one, so the composition root and
 * the modules above plug in the reader (`invoiceSettlements` of the `settlements` module).
 */
export interface InvoiceSettlements {
  creditNotes: Array<{ number: string | null; date: string; total: string; settlement: 'reduces_due' | 'refund' | 'balance' | null }>;
  payments: Array<{ date: string; amount: string; method: string | null; reference: string | null; refundOf: string | null }>;
}

export type SettlementReader = (db: Knex, organisationId: string, invoiceId: string) => Promise<InvoiceSettlements>;

/** Who issues or receives an invoice, as a raised invoice keeps them (`data.parties`): printed the same for good. */
export interface PartySnapshot {
  name: string;
  taxId: string | null;
  address: PostalAddress | null;
}

export interface InvoiceParties {
  seller: PartySnapshot | null;
  customer: PartySnapshot | null;
}

function toParty(party: PartySnapshot | null, locale: string): InvoiceParty | null {
  if (!party) return null;
  return { name: party.name, ...(party.taxId === null ? {} : { taxId: party.taxId }), addressLines: party.address ? addressLines(party.address, locale) : [] };
}

/** The first live entity of a kind, with its first address: who issues and who receives the invoice. */
async function entityParty(db: Knex, organisationId: string, filter: { type: EntityType; customerId?: string }): Promise<PartySnapshot | null> {
  const row: EntityRow | undefined = await entitiesIn(db).firstLive(organisationId, filter);
  if (!row) return null;
  const address: Address | undefined = (await addressesIn(db).listByEntity(organisationId, [row.id])).get(row.id)?.[0];
  const postal = address ? { line1: address.line1, line2: address.line2, city: address.city, state: address.state, postalCode: address.postalCode, country: address.country } : null;
  return { name: row.name, taxId: row.tax_id, address: postal };
}

/**
 * The seller (the organisation's first live seller entity) and the customer (its first live entity, else
 * its name alone) with their first addresses, as they are now. The raise keeps them in the invoice's
 * `data.parties`, so that an issued invoice prints the same parties whatever is renamed or deleted later.
 */
export async function invoicePartiesOf(db: Knex, organisationId: string, customerId: string | null): Promise<InvoiceParties> {
  const [seller, customerEntity, customer] = await Promise.all([
    entityParty(db, organisationId, { type: 'seller' }),
    customerId ? entityParty(db, organisationId, { type: 'customer', customerId }) : null,
    customerId ? customersIn(db).findAnyById(organisationId, customerId) : undefined,
  ]);
  return { seller, customer: customerEntity ?? (customer ? { name: customer.name, taxId: null, address: null } : null) };
}

/**
 * A payment's line: `Payment, bank transfer, ref BACS-1`; a refund names its credit note. The payment
 * that marking the invoice paid records (method `invoice`) is simply a payment.
 */
function paymentLabel(payment: InvoiceSettlements['payments'][number]): string {
  if (payment.refundOf !== null) return `Refund of credit note ${payment.refundOf}`;
  const method = payment.method === 'invoice' ? null : payment.method?.replace(/_/g, ' ');
  return ['Payment', method, payment.reference ? `ref ${payment.reference}` : null].filter(Boolean).join(', ');
}

/**
 * The payments and credits section: the customer's credit (taken, or given by a total below zero), then
 * credit notes and payments by date, each signed as it changes what is due; the amount due is what is left
 * of the total, never below nothing, and nothing once the invoice is paid. Only raised, sent and paid invoices that anything settles have one.
 */
function settledSection(invoice: { status: string; total: string | null; creditsApplied: string; creditedToBalance: string }, settlements: InvoiceSettlements): InvoiceDocument['settled'] {
  if (!['raised', 'sent', 'paid'].includes(invoice.status) || invoice.total === null) return undefined;
  const dated: Array<{ date: string; label: string; amount: Decimal }> = [];
  for (const note of settlements.creditNotes) {
    const label = `Credit note ${note.number ?? ''}`.trim();
    dated.push({ date: note.date, label, amount: new Decimal(note.total).negated() });
    if (note.settlement === 'balance') dated.push({ date: note.date, label: `${label} added to your credit balance`, amount: new Decimal(note.total) });
  }
  for (const payment of settlements.payments) dated.push({ date: payment.date, label: paymentLabel(payment), amount: new Decimal(payment.amount).negated() });
  // Stable: a credit note's balance line stays under it.
  dated.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
  const lines = [
    ...(new Decimal(invoice.creditsApplied).greaterThan(0) ? [{ date: null, label: 'Customer credit applied', amount: new Decimal(invoice.creditsApplied).negated() }] : []),
    ...(new Decimal(invoice.creditedToBalance).greaterThan(0) ? [{ date: null, label: 'Added to your credit balance', amount: new Decimal(invoice.creditedToBalance) }] : []),
    ...dated,
  ];
  if (lines.length === 0) return undefined;
  const left = lines.reduce((sum, line) => sum.plus(line.amount), new Decimal(invoice.total));
  const amountDue = invoice.status === 'paid' || left.isNegative() ? new Decimal(0) : left;
  return { lines: lines.map((line) => ({ ...line, amount: line.amount.toFixed() })), amountDue: amountDue.toFixed() };
}

/** The block as printed: the reference's `{number}` is the invoice's number; without a reference, the number itself. */
function paymentDetailsFor(details: PaymentDetails | null, number: string | null): PaymentDetails | null {
  if (!details) return null;
  const { reference, ...rest } = details;
  const printed = reference === undefined ? number : number === null ? (reference.includes('{number}') ? null : reference) : reference.replaceAll('{number}', number);
  return { ...rest, ...(printed ? { reference: printed } : {}) };
}

/**
 * What the PDF shows: the invoice, its seller and its customer (addresses in their countries' formats),
 * the payments and credits that settle it (through `settlements`; null leaves them out), the
 * organisation's payment details, in the customer's locale (else the organisation's) and the
 * organisation's default template if it has one.
 */
export async function loadInvoiceDocument(db: Knex, organisationId: string, invoiceId: string, settlements: SettlementReader | null): Promise<InvoiceDocument> {
  const invoice = orNotFound(await createInvoiceRepository(db).find(organisationId, invoiceId), 'Invoice');
  const customerId = invoice.customerId;
  const [parties, customer, template, settings, settledBy] = await Promise.all([
    // A raised invoice prints the parties it was raised with; a draft (or one raised before they were kept), today's.
    (invoice.data.parties as InvoiceParties | undefined) ?? invoicePartiesOf(db, organisationId, customerId),
    customerId ? customersIn(db).findAnyById(organisationId, customerId) : undefined,
    invoiceTemplatesIn(db).findDefaultBranding(organisationId),
    getOrganisationSettings(db, organisationId),
    settlements ? settlements(db, organisationId, invoiceId) : null,
  ]);
  const locale = customer?.locale ?? settings.locale;
  const taxes = (invoice.data.taxes as InvoiceDocument['taxes'] | undefined) ?? [];
  const settled = settledBy ? settledSection(invoice, settledBy) : undefined;
  return {
    number: invoice.number,
    status: invoice.status,
    date: invoice.date,
    fromDate: invoice.fromDate,
    toDate: invoice.toDate,
    dueDate: invoice.dueDate,
    currency: invoice.currency,
    locale,
    customerReference: invoice.customerReference,
    purchaseOrderNumber: invoice.purchaseOrderNumber,
    seller: toParty(parties.seller, locale),
    customer: toParty(parties.customer, locale),
    items: invoice.items.map((item) => ({ title: item.title, description: item.description, quantity: item.quantity, price: item.price, amount: item.amount ?? '' })),
    subtotal: invoice.subtotal ?? '',
    taxes,
    total: invoice.total ?? '',
    baseCurrency: invoice.baseCurrency,
    baseTotal: invoice.baseTotal,
    ...(settled ? { settled } : {}),
    paymentDetails: paymentDetailsFor(settings.payment_details, invoice.number),
    template,
  };
}
