import type { Knex } from 'knex';
import type { InvoiceDocument, InvoiceParty } from './invoice-pdf';
import { createInvoiceRepository } from './invoices.repository';

interface EntityWithAddress {
  name: string;
  tax_id: string | null;
  line1: string | null;
  line2: string | null;
  city: string | null;
  state: string | null;
  postal_code: string | null;
  country: string | null;
}

function toParty(row: EntityWithAddress | undefined, fallbackName?: string): InvoiceParty | null {
  if (!row) return fallbackName ? { name: fallbackName, addressLines: [] } : null;
  const cityLine = [row.postal_code, row.city, row.state].filter(Boolean).join(' ');
  return { name: row.name, taxId: row.tax_id, addressLines: [row.line1, row.line2, cityLine, row.country].filter((line): line is string => Boolean(line)) };
}

/** The first live entity of a kind, with its first address: who issues and who receives the invoice. */
async function entityParty(db: Knex, organisationId: string, filter: Record<string, string>): Promise<EntityWithAddress | undefined> {
  return db('entities as e')
    .leftJoin('addresses as a', 'a.entity_id', 'e.id')
    .where({ 'e.organisation_id': organisationId, ...Object.fromEntries(Object.entries(filter).map(([k, v]) => [`e.${k}`, v])) })
    .whereNull('e.deleted_at')
    .orderBy([{ column: 'e.created_at' }, { column: 'a.created_at' }])
    .first('e.name', 'e.tax_id', 'a.line1', 'a.line2', 'a.city', 'a.state', 'a.postal_code', 'a.country');
}

export async function loadInvoiceDocument(db: Knex, organisationId: string, invoiceId: string): Promise<InvoiceDocument | undefined> {
  const invoice = await createInvoiceRepository(db).find(organisationId, invoiceId);
  if (!invoice) return undefined;
  const customer = invoice.customerId ? await db('customers').where({ organisation_id: organisationId, id: invoice.customerId }).first('name') : undefined;
  const [seller, customerEntity] = await Promise.all([
    entityParty(db, organisationId, { type: 'seller' }),
    invoice.customerId ? entityParty(db, organisationId, { type: 'customer', customer_id: invoice.customerId }) : undefined,
  ]);
  const taxes = (invoice.data.taxes as InvoiceDocument['taxes'] | undefined) ?? [];
  return {
    number: invoice.number,
    status: invoice.status,
    date: invoice.date,
    fromDate: invoice.fromDate,
    toDate: invoice.toDate,
    currency: invoice.currency,
    seller: toParty(seller),
    customer: toParty(customerEntity, customer?.name),
    items: invoice.items.map((item) => ({ title: item.title, description: item.description, quantity: item.quantity, price: item.price, amount: item.amount ?? '' })),
    subtotal: invoice.subtotal ?? '',
    taxes,
    total: invoice.total ?? '',
    baseCurrency: invoice.baseCurrency,
    baseTotal: invoice.baseTotal,
  };
}
