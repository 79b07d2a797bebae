import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { newId } from '../../db/ids';
import { toDecimal } from '../../domain/money';
import { priceItem, type PricedPlanItem } from '../../domain/pricing';
import { AppError } from '../../domain/errors';
import { createMeterRepository, type MeterRow } from '../meters/meters.repository';

interface PlanItemRow extends PricedPlanItem {
  id: string;
  name: string;
  meter_id: string | null;
}

/**
 * Recomputes a draft's plan-derived items from its contract plan: each plan item priced for the
 * invoice's period, usage items for the meter's aggregate over all the customer's entities. Items
 * added by hand (no plan item) are kept. One transaction under the invoice's row lock.
 */
export async function syncDraftItems(db: Knex, organisationId: string, invoiceId: string): Promise<void> {
  await db.transaction(async (trx) => {
    const invoice = await trx('invoices').where({ organisation_id: organisationId, id: invoiceId }).whereNull('deleted_at').forUpdate().first();
    if (!invoice) throw AppError.notFound('Invoice');
    if (invoice.status !== 'draft') throw AppError.conflict('Items can change only while the invoice is a draft');
    if (!invoice.contract_plan_id) throw AppError.conflict('The invoice has no contract plan to sync from');
    if (!invoice.from_date || !invoice.to_date) throw AppError.conflict('The invoice needs fromDate and toDate to be synced');
    const from = calendarDay(invoice.from_date);
    const to = calendarDay(invoice.to_date);
    const planItems: PlanItemRow[] = (
      await trx('billing_plan_items as i')
        .join('contract_plans as cp', 'cp.plan_id', 'i.plan_id')
        .where({ 'cp.id': invoice.contract_plan_id, 'cp.organisation_id': organisationId })
        .orderBy([{ column: 'i.created_at' }, { column: 'i.id' }])
        .select('i.id', 'i.name', 'i.meter_id', 'i.pricing_model', 'i.unit_price', 'i.quantity', 'i.tiers', 'i.package_size')
    ).map((row: Record<string, unknown>) => ({
      id: row.id as string,
      name: row.name as string,
      meter_id: row.meter_id as string | null,
      pricingModel: row.pricing_model as PricedPlanItem['pricingModel'],
      unitPrice: row.unit_price as string | null,
      quantity: row.quantity as string | null,
      tiers: row.tiers as PricedPlanItem['tiers'],
      packageSize: row.package_size as string | null,
    }));
    const entityIds = (await trx('entities').where({ organisation_id: organisationId, customer_id: invoice.customer_id, type: 'customer' }).pluck('id')) as string[];
    const meters = createMeterRepository(trx);
    const end = new Date(`${to}T00:00:00Z`);
    end.setUTCDate(end.getUTCDate() + 1);

    const items = [];
    for (const item of planItems) {
      let usage = toDecimal(item.quantity ?? 1);
      if (item.meter_id) {
        const meter = await trx<MeterRow>('meters').where({ organisation_id: organisationId, id: item.meter_id }).first();
        const result = meter && entityIds.length ? await meters.aggregate(meter, { customerEntityIds: entityIds, from: new Date(`${from}T00:00:00Z`), to: end }) : { value: null };
        usage = toDecimal(result.value ?? 0);
      }
      const price = priceItem(item, usage.toFixed(), invoice.currency);
      const perUnit = item.pricingModel === 'per_unit';
      items.push({
        id: newId('itm'),
        organisation_id: organisationId,
        invoice_id: invoiceId,
        plan_item_id: item.id,
        title: item.name,
        description: price.lines.map((line) => `${line.description}: ${line.quantity} × ${line.unitPrice}`).join('; '),
        quantity: perUnit ? usage.toFixed() : 1,
        price: perUnit ? toDecimal(item.unitPrice!).toFixed() : price.amount,
        from_date: from,
        to_date: to,
      });
    }
    await trx('invoice_items').where({ invoice_id: invoiceId }).whereNotNull('plan_item_id').delete();
    if (items.length) await trx('invoice_items').insert(items);
  });
}
