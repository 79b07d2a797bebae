import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { AppError, InvariantError, orNotFound } from '../../domain/errors';
import { shareDiscounts, type Charge } from '../../domain/rating';
import { discountLinesOf, discountsKept } from '../../domain/rating-coupons';
import { plansIn } from '../billing-plans';
import { chargesIn } from '../charges';
import { contractsIn } from '../contracts';
import { couponsIn } from '../coupons';
import { assertInvoiceFits } from './invoice-pricing';
import { createInvoiceRepository, toInvoiceItem, type Invoice, type InvoiceRow, type NewInvoiceItem } from './invoices.repository';

const DRAFT_ONLY = 'Items can change only while the invoice is a draft';

type InvoiceItem = ReturnType<typeof toInvoiceItem>;

/** A line may name a plan item of the organisation only: another's answers as a missing one, 404. */
export async function assertPlanItemsKnown(db: Knex, organisationId: string, items: ReadonlyArray<{ planItemId?: string | null }>): Promise<void> {
  const named = [...new Set(items.flatMap((item) => (item.planItemId ? [item.planItemId] : [])))];
  if (named.length === 0) return;
  const known = await plansIn(db).existingItemIds(organisationId, named);
  if (known.length !== named.length) throw AppError.notFound('Plan item');
}

/** Guard and lock: items change only while the invoice is a draft, and the row lock makes the check and the write one step. */
function assertDraft(invoice: InvoiceRow, message = DRAFT_ONLY): void {
  if (invoice.status !== 'draft') throw AppError.conflict(message);
}

/** Reprices a draft's plan-derived lines through the rating engine (the invoice-runs module provides it). */
export type DraftRepricer = (
  trx: Knex,
  draft: { organisationId: string; invoiceId: string; contractId: string; contractPlanId: string; date: string; span: { from: string; to: string } | null },
) => Promise<{ items: NewInvoiceItem[]; charges: Charge[] }>;

/** An invoice's items: read always, changed only while it is a draft. */
export function createInvoiceItemService(db: Knex, repriceDraft: DraftRepricer) {
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
        const lines = [...(await createInvoiceRepository(trx).items(invoiceId)), { quantity: item.quantity, price: item.price, plan_item_id: item.planItemId ?? null }];
        await assertInvoiceFits(trx, invoice.contract_id, invoice.currency, lines, 'body');
        return toInvoiceItem(await createInvoiceRepository(trx).insertItem(organisationId, invoiceId, item), invoice.currency);
      });
    },

    async delete(organisationId: string, invoiceId: string, itemId: string): Promise<void> {
      await locked(organisationId, invoiceId, 'Invoice item', async (trx, invoice) => {
        const items = createInvoiceRepository(trx);
        const found = orNotFound(await items.findItem(organisationId, itemId, invoiceId), 'Invoice item');
        assertDraft(invoice, 'Items can be deleted only while the invoice is a draft');
        if (found.plan_change_id) throw AppError.conflict(`the item credits plan change ${found.plan_change_id}: removed, the customer would lose that credit`);
        // The contract's ledger bills each day once: a line it charged, deleted, would never be billed; a
        // coupon's discount, deleted, would still count as served.
        if (found.coupon_id) throw AppError.conflict(`the item is coupon ${found.coupon_id}'s discount, and the coupon counts this period as served: removed, the customer would lose it; cancel the invoice instead`);
        const charged = found.plan_item_id && found.from_date && found.to_date ? (await chargesIn(trx).ofInvoice(invoiceId)).find((charge) => charge.planItemId === found.plan_item_id && charge.from <= calendarDay(found.to_date!) && charge.to >= calendarDay(found.from_date!)) : undefined;
        if (charged) {
          throw AppError.conflict(`the item is what the contract's ledger charged for its plan item from ${charged.from} to ${charged.to}, which is billed once: removed, those days would never be billed; change the contract or its plan and sync the draft (POST /invoices/{id}/sync-items), or cancel the invoice`);
        }
        await items.deleteItem(itemId);
      });
    },

    /**
     * Recomputes a draft's plan-derived lines through the rating engine, for its contract plan on its
     * date and within its days, as if it had charged nothing: the same periods and proration a run gives,
     * and only what no other document charged (usage billed by a later invoice is not billed again). Its charges in the
     * ledger are replaced. Lines added by hand and plan-change credits are kept as they are; discount lines are
     * kept as `discountsKept` says (a percentage coupon's taken again off the new lines).
   * A progressive billing draft is not synced (409).
     */
    async syncFromPlan(organisationId: string, invoiceId: string): Promise<Invoice> {
      await db.transaction(async (trx) => {
        const found = orNotFound(await createInvoiceRepository(trx).findRow(organisationId, invoiceId), 'Invoice');
        if (!found.contract_plan_id || !found.contract_id) throw AppError.conflict('The invoice has no contract plan to sync from');
        // Its usage is what the check rated when a threshold was crossed: rated again on its date, it would bill none of it.
        if (found.data?.progressiveBilling) {
          throw AppError.conflict('The invoice bills the usage that crossed a progressive billing threshold, as rated then; it is not recomputed from the plan (the period’s own invoice bills the rest)');
        }
        // The contract's row lock first, as runs and plan changes take it: the ledger changes under it.
        await contractsIn(trx).lockMany(organisationId, [found.contract_id]);
        const invoice = orNotFound(await createInvoiceRepository(trx).lock(organisationId, invoiceId), 'Invoice');
        assertDraft(invoice);
        const charges = chargesIn(trx);
        const span = invoice.from_date && invoice.to_date ? { from: calendarDay(invoice.from_date), to: calendarDay(invoice.to_date) } : null;
        const draft = { organisationId, invoiceId, contractId: found.contract_id, contractPlanId: found.contract_plan_id, date: calendarDay(invoice.date), span };
        const repriced = await repriceDraft(trx, draft);
        await charges.forgetInvoice(invoiceId);
        const repository = createInvoiceRepository(trx);
        await repository.replacePlanItems(organisationId, invoiceId, repriced.items);
        // The discount lines it keeps: a percentage of the lines now priced within their days, an amount
        // coupon's no more than it took, and together no more than those lines charge.
        const before = (await repository.listItems(organisationId, invoiceId)).map((row) => toInvoiceItem(row, invoice.currency));
        const discounts = discountLinesOf(before);
        const priced = before.filter((line) => line.planItemId && !line.couponId && !line.planChangeId);
        const percents = await couponsIn(trx).percentOffOf([...new Set(discounts.map((discount) => discount.couponId))]);
        const keeps = discountsKept(priced, discounts, invoice.currency, percents);
        const cut = discounts.filter((discount) => !keeps.get(discount.id)!.equals(discount.amount));
        for (const discount of cut) {
          const amount = keeps.get(discount.id)!;
          if (amount.isZero()) await repository.deleteItem(discount.id);
          else await repository.setDiscount(discount.id, amount.toFixed());
        }
        // The discount lines it keeps are shared again over the charges it now makes.
        const kept = cut.length === 0 ? before : (await repository.listItems(organisationId, invoiceId)).map((row) => toInvoiceItem(row, invoice.currency));
        const shared = shareDiscounts(repriced.charges, discountLinesOf(kept), invoice.currency);
        const recorded = await charges.record(organisationId, null, shared.map((charge) => ({ ...charge, contractId: draft.contractId, contractPlanId: draft.contractPlanId, invoiceId })));
        // Under the contract's lock no one else charges these days: a mismatch is a bug, and rolls back.
        if (recorded !== repriced.charges.length) throw new InvariantError(`${repriced.charges.length - recorded} of the draft's charges were made meanwhile`);
      });
      return orNotFound(await invoices.find(organisationId, invoiceId), 'Invoice');
    },
  };
}

export type InvoiceItemService = ReturnType<typeof createInvoiceItemService>;
