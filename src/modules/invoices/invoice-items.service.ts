import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { AppError, orNotFound } from '../../domain/errors';
import { toDecimal, type Decimal } from '../../domain/money';
import { priceItem, type PricedPlanItem } from '../../domain/pricing';
import { createBillingPlanRepository } from '../billing-plans/billing-plans.repository';
import { createContractRepository } from '../contracts/contracts.repository';
import { createEntityRepository } from '../entities/entities.repository';
import { createMeterRepository } from '../meters/meters.repository';
import { createInvoiceRepository, toInvoiceItem, type Invoice, type InvoiceRow, type NewInvoiceItem } from './invoices.repository';

const DRAFT_ONLY = 'Items can change only while the invoice is a draft';

type InvoiceItem = ReturnType<typeof toInvoiceItem>;

/** A line may name a plan item of the organisation only: another's answers as a missing one, 404. */
export async function assertPlanItemsKnown(db: Knex, organisationId: string, items: ReadonlyArray<{ planItemId?: string | null }>): Promise<void> {
  const named = [...new Set(items.flatMap((item) => (item.planItemId ? [item.planItemId] : [])))];
  if (named.length === 0) return;
  const known = await createBillingPlanRepository(db).existingItemIds(organisationId, named);
  if (known.length !== named.length) throw AppError.notFound('Plan item');
}

/** Guard and lock: items change only while the invoice is a draft, and the row lock makes the check and the write one step. */
function assertDraft(invoice: InvoiceRow, message = DRAFT_ONLY): void {
  if (invoice.status !== 'draft') throw AppError.conflict(message);
}

/**
 * An invoice line for a plan item rated at a quantity: a per-unit item shows the quantity and its unit
 * price; any other shows its priced amount once. The description keeps the rating, one part per tier.
 */
export function ratedLine(item: PricedPlanItem & { id: string; name: string }, quantity: Decimal, currency: string): Omit<NewInvoiceItem, 'fromDate' | 'toDate'> {
  const price = priceItem(item, quantity.toFixed(), currency);
  const perUnit = item.pricingModel === 'per_unit';
  return {
    planItemId: item.id,
    title: item.name,
    description: price.lines.map((line) => `${line.description}: ${line.quantity} × ${line.unitPrice}`).join('; '),
    quantity: perUnit ? quantity.toFixed() : '1',
    price: perUnit ? toDecimal(item.unitPrice!).toFixed() : price.amount,
  };
}

/** Each of the contract plan's items priced for the invoice's period, usage items for the meter's aggregate over all the customer's entities. */
async function planItemsFor(trx: Knex, invoice: InvoiceRow): Promise<NewInvoiceItem[]> {
  if (!invoice.contract_plan_id || !invoice.contract_id) throw AppError.conflict('The invoice has no contract plan to sync from');
  if (!invoice.from_date || !invoice.to_date) throw AppError.conflict('The invoice needs fromDate and toDate to be synced');
  const organisationId = invoice.organisation_id;
  const from = calendarDay(invoice.from_date);
  const to = calendarDay(invoice.to_date);
  const contractPlan = await createContractRepository(trx).contractPlan(organisationId, invoice.contract_id, invoice.contract_plan_id);
  const plan = contractPlan ? await createBillingPlanRepository(trx).find(organisationId, contractPlan.plan_id) : undefined;
  const entityIds = invoice.customer_id ? await createEntityRepository(trx).customerEntityIds(organisationId, invoice.customer_id) : [];
  const meters = createMeterRepository(trx);
  const end = new Date(`${to}T00:00:00Z`);
  end.setUTCDate(end.getUTCDate() + 1);

  const items: NewInvoiceItem[] = [];
  for (const item of plan?.items ?? []) {
    let usage = toDecimal(item.quantity ?? 1);
    if (item.meterId) {
      const meter = await meters.findById(organisationId, item.meterId);
      const result = meter && entityIds.length ? await meters.aggregate(meter, { customerEntityIds: entityIds, from: new Date(`${from}T00:00:00Z`), to: end }) : { value: null };
      usage = toDecimal(result.value ?? 0);
    }
    items.push({ ...ratedLine(item, usage, invoice.currency), fromDate: from, toDate: to });
  }
  return items;
}

/** An invoice's items: read always, changed only while it is a draft. */
export function createInvoiceItemService(db: Knex) {
  const invoices = createInvoiceRepository(db);

  /** One transaction under the invoice's row lock. */
  const locked = <R>(organisationId: string, invoiceId: string, what: string, work: (trx: Knex, invoice: InvoiceRow) => Promise<R>) =>
    db.transaction(async (trx) => work(trx, orNotFound(await createInvoiceRepository(trx).lock(organisationId, invoiceId), what)));

  return {
    async list(organisationId: string, invoiceId: string): Promise<InvoiceItem[]> {
      const invoice = orNotFound(await invoices.findRow(organisationId, invoiceId), 'Invoice');
      return (await invoices.listItems(organisationId, invoiceId)).map((item) => toInvoiceItem(item, invoice.currency));
    },

    async add(organisationId: string, invoiceId: string, item: NewInvoiceItem): Promise<InvoiceItem> {
      return locked(organisationId, invoiceId, 'Invoice', async (trx, invoice) => {
        assertDraft(invoice);
        await assertPlanItemsKnown(trx, organisationId, [item]);
        return toInvoiceItem(await createInvoiceRepository(trx).insertItem(organisationId, invoiceId, item), invoice.currency);
      });
    },

    async delete(organisationId: string, invoiceId: string, itemId: string): Promise<void> {
      await locked(organisationId, invoiceId, 'Invoice item', async (trx, invoice) => {
        const items = createInvoiceRepository(trx);
        const found = orNotFound(await items.findItem(organisationId, itemId, invoiceId), 'Invoice item');
        assertDraft(invoice, 'Items can be deleted only while the invoice is a draft');
        if (found.plan_change_id) throw AppError.conflict(`the item credits plan change ${found.plan_change_id}: removed, the customer would lose that credit`);
        await items.deleteItem(itemId);
      });
    },

    /**
     * Recomputes a draft's plan-derived items from its contract plan and metered usage for its period.
     * Items added by hand (no plan item) are kept.
     */
    async syncFromPlan(organisationId: string, invoiceId: string): Promise<Invoice> {
      await locked(organisationId, invoiceId, 'Invoice', async (trx, invoice) => {
        assertDraft(invoice);
        await createInvoiceRepository(trx).replacePlanItems(organisationId, invoiceId, await planItemsFor(trx, invoice));
      });
      return orNotFound(await invoices.find(organisationId, invoiceId), 'Invoice');
    },
  };
}

export type InvoiceItemService = ReturnType<typeof createInvoiceItemService>;
