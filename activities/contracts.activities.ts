import type { Knex } from 'knex';
import { newId } from '../src/db/ids';
import type { ContractState } from '../src/domain/contract-state';
import { Decimal, formatAmount } from '../src/domain/money';
import { priceItem, type PricedPlanItem } from '../src/domain/pricing';
import { AppError } from '../src/domain/errors';

interface MilestoneRow {
  id: string;
  contract_id: string;
  contract_plan_id: string;
  name: string;
  amount: string | null;
  percentage: string | null;
  due_date: Date | null;
  invoice_id: string | null;
  customer_id: string;
  currency: string;
  pricing_model: PricedPlanItem['pricingModel'];
  unit_price: string | null;
  quantity: string | null;
  tiers: PricedPlanItem['tiers'];
  package_size: string | null;
  plan_item_id: string;
}

export function createContractActivities(deps: { db: Knex }) {
  const { db } = deps;
  return {
    /** Guard, lock, transition; already in the target state is a successful no-op (a retry). */
    async setContractStatus(input: { organisationId: string; contractId: string; from: ContractState; to: ContractState }): Promise<void> {
      await db.transaction(async (trx) => {
        const contract = await trx('contracts').where({ organisation_id: input.organisationId, id: input.contractId }).forUpdate().first<{ status: ContractState } | undefined>('status');
        if (!contract) throw new AppError('not_found', 'Contract not found');
        if (contract.status === input.to) return;
        if (contract.status !== input.from) throw new AppError('conflict', `the contract is ${contract.status}, not ${input.from}`);
        await trx('contracts').where({ id: input.contractId }).update({ status: input.to, updated_at: trx.fn.now() });
      });
    },

    /**
     * Records the milestone as achieved and creates its draft invoice, once: a second call returns the
     * invoice of the first. The amount is the milestone's own, or its percentage of the plan item's price.
     */
    async achieveMilestone(input: { organisationId: string; contractId: string; milestoneId: string }): Promise<{ invoiceId: string }> {
      return db.transaction(async (trx) => {
        const milestone = await trx('contract_milestones as m')
          .join('contracts as c', 'c.id', 'm.contract_id')
          .join('billing_plan_items as i', 'i.id', 'm.plan_item_id')
          .where({ 'm.organisation_id': input.organisationId, 'm.contract_id': input.contractId, 'm.id': input.milestoneId })
          .forUpdate('m')
          .first<MilestoneRow | undefined>(
            'm.*',
            'c.customer_id',
            'c.currency',
            'i.pricing_model',
            'i.unit_price',
            'i.quantity',
            'i.tiers',
            'i.package_size',
          );
        if (!milestone) throw new AppError('not_found', 'Milestone not found');
        if (milestone.invoice_id) return { invoiceId: milestone.invoice_id };

        const amount =
          milestone.amount !== null
            ? formatAmount(milestone.amount, milestone.currency)
            : formatAmount(
                new Decimal(
                  priceItem(
                    { pricingModel: milestone.pricing_model, unitPrice: milestone.unit_price, quantity: milestone.quantity, tiers: milestone.tiers, packageSize: milestone.package_size },
                    milestone.quantity ?? 1,
                    milestone.currency,
                  ).amount,
                )
                  .times(milestone.percentage!)
                  .dividedBy(100),
                milestone.currency,
              );
        const invoiceId = newId('inv');
        const today = new Date().toISOString().slice(0, 10);
        await trx('invoices').insert({
          id: invoiceId,
          organisation_id: input.organisationId,
          customer_id: milestone.customer_id,
          contract_id: input.contractId,
          contract_plan_id: milestone.contract_plan_id,
          currency: milestone.currency,
          date: today,
          data: JSON.stringify({ milestoneId: milestone.id }),
        });
        await trx('invoice_items').insert({
          id: newId('itm'),
          organisation_id: input.organisationId,
          invoice_id: invoiceId,
          plan_item_id: milestone.plan_item_id,
          title: milestone.name,
          description: 'Milestone achieved',
          quantity: 1,
          price: amount,
        });
        await trx('contract_milestones').where({ id: milestone.id }).update({ achieved_at: trx.fn.now(), invoice_id: invoiceId, updated_at: trx.fn.now() });
        return { invoiceId };
      });
    },
  };
}

export type ContractActivities = ReturnType<typeof createContractActivities>;
