import type { Knex } from 'knex';
import { orNotFound } from '../../domain/errors';
import { Decimal, formatAmount } from '../../domain/money';
import { addressesIn, type Address, customersIn, entitiesIn, type EntityRow, type EntityType } from '../customers';
import { invoiceTemplatesIn } from '../invoice-templates';
import type { InvoiceDocument, InvoiceParty } from './invoice-pdf';
import { createInvoiceRepository } from './invoices.repository';

function toParty(entity: { row: EntityRow; address: Address | undefined } | undefined, fallbackName?: string): InvoiceParty | null {
  if (!entity) return fallbackName ? { name: fallbackName, addressLines: [] } : null;
  const { row, address } = entity;
  const cityLine = [address?.postalCode, address?.city, address?.state].filter(Boolean).join(' ');
  return { name: row.name, taxId: row.tax_id, addressLines: [address?.line1, address?.line2, cityLine, address?.country].filter((line): line is string => Boolean(line)) };
}

/** The first live entity of a kind, with its first address: who issues and who receives the invoice. */
async function entityParty(db: Knex, organisationId: string, filter: { type: EntityType; customerId?: string }) {
  const row = await entitiesIn(db).firstLive(organisationId, filter);
  if (!row) return undefined;
  const addresses = await addressesIn(db).listByEntity(organisationId, [row.id]);
  return { row, address: addresses.get(row.id)?.[0] };
}

/** What the PDF shows: the invoice, its seller and its customer, in the organisation's default template if it has one. */
export async function loadInvoiceDocument(db: Knex, organisationId: string, invoiceId: string): Promise<InvoiceDocument> {
  const invoice = orNotFound(await createInvoiceRepository(db).find(organisationId, invoiceId), 'Invoice');
  const customerId = invoice.customerId;
  const [seller, customerEntity, customer, template] = await Promise.all([
    entityParty(db, organisationId, { type: 'seller' }),
    customerId ? entityParty(db, organisationId, { type: 'customer', customerId }) : undefined,
    customerId ? customersIn(db).findAnyById(organisationId, customerId) : undefined,
    invoiceTemplatesIn(db).findDefaultBranding(organisationId),
  ]);
  const taxes = (invoice.data.taxes as InvoiceDocument['taxes'] | undefined) ?? [];
  // An owed invoice that credit or credit notes partly settle shows them, and what is left due.
  const owed = (invoice.status === 'raised' || invoice.status === 'sent') && invoice.total !== null && invoice.amountDue !== null && invoice.amountDue !== invoice.total;
  const creditNotes = owed ? new Decimal(invoice.total!).minus(invoice.creditsApplied).minus(invoice.amountDue!) : new Decimal(0);
  const settled = owed
    ? {
        lines: [
          ...(new Decimal(invoice.creditsApplied).greaterThan(0) ? [{ label: 'Customer credit applied', amount: `-${invoice.creditsApplied}` }] : []),
          ...(creditNotes.greaterThan(0) ? [{ label: 'Credit notes', amount: `-${formatAmount(creditNotes, invoice.currency)}` }] : []),
        ],
        amountDue: invoice.amountDue!,
      }
    : undefined;
  return {
    number: invoice.number,
    status: invoice.status,
    date: invoice.date,
    fromDate: invoice.fromDate,
    toDate: invoice.toDate,
    dueDate: invoice.dueDate,
    currency: invoice.currency,
    seller: toParty(seller),
    customer: toParty(customerEntity, customer?.name),
    items: invoice.items.map((item) => ({ title: item.title, description: item.description, quantity: item.quantity, price: item.price, amount: item.amount ?? '' })),
    subtotal: invoice.subtotal ?? '',
    taxes,
    total: invoice.total ?? '',
    baseCurrency: invoice.baseCurrency,
    baseTotal: invoice.baseTotal,
    ...(settled ? { settled } : {}),
    template,
  };
}
