import { domainEvent } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import type { Knex } from 'knex';
import type { ContractState } from '../../domain/contract-state';
import { AppError, orNotFound } from '../../domain/errors';
import { formatAmount } from '../../domain/money';
import { milestoneCharge } from '../../domain/rating';
import { plansIn } from '../billing-plans';
import { customerToday } from '../customers';
import { invoicesIn, type NewInvoice } from '../invoices';
import { organisationToday } from '../organisation-settings';
import { assertUsageUnshared, contractsIn, type MilestoneToInvoice } from '../contracts';

/** The milestone's own amount, or its percentage of its plan item's price. */
async function milestoneAmount(trx: Knex, organisationId: string, milestone: MilestoneToInvoice): Promise<string> {
  if (milestone.amount !== null) return formatAmount(milestone.amount, milestone.currency);
  const item = orNotFound(await plansIn(trx).findItem(organisationId, milestone.plan_item_id), 'Plan item');
  if (item.pricing_model === null) throw AppError.validation(`plan item ${item.id} is priced per dimension value alone: a milestone of it needs an amount of its own`);
  return milestoneCharge({ pricingModel: item.pricing_model, unitPrice: item.unit_price, quantity: item.quantity, tiers: item.tiers, packageSize: item.package_size }, milestone.currency, milestone);
}

/** The event of a contract's status change (a contract never goes back to draft). */
function contractEventOf(from: ContractState, to: ContractState): `contract.${'activated' | 'resumed' | Exclude<ContractState, 'draft' | 'active'>}` {
  if (to === 'draft') throw AppError.conflict('a contract never goes back to draft');
  if (to === 'active') return from === 'suspended' ? 'contract.resumed' : 'contract.activated';
  return `contract.${to}`;
}

export interface SetContractStatusInput {
  organisationId: string;
  contractId: string;
  from: ContractState;
  to: ContractState;
}

export interface AchieveMilestoneInput {
  organisationId: string;
  contractId: string;
  milestoneId: string;
}

/** The steps of the contract workflow: each one transaction, safe to retry. */
export function createContractLifecycleService(db: Knex) {
  return {
    /** Guard, lock, transition; already in the target state is a successful no-op (a retry). */
    async setStatus(input: SetContractStatusInput): Promise<void> {
      await db.transaction(async (trx) => {
        const contracts = contractsIn(trx);
        const status = orNotFound(await contracts.lockStatus(input.organisationId, input.contractId), 'Contract');
        if (status === input.to) return;
        if (status !== input.from) throw AppError.conflict(`the contract is ${status}, not ${input.from}`);
        if (input.from === 'draft' && input.to === 'active') {
          const contract = (await contracts.find(input.organisationId, input.contractId))!;
          await assertUsageUnshared(trx, input.organisationId, input.contractId, contract.plans.map((plan) => plan.id));
        }
        await contracts.setStatus(input.contractId, input.to);
        // What billing needs to know of the change: the days without fees, and the last day billed, as
        // the rating engine reads days: in the organisation's zone.
        const today = await organisationToday(trx, input.organisationId);
        if (input.from === 'suspended') await contracts.closeSuspension(input.contractId, today);
        // What `contract.resumed` needs, if it is triggered later: a suspension of less than a day leaves no row.
        if (input.from === 'suspended' && input.to === 'active') await contracts.markResumed(input.contractId);
        if (input.to === 'suspended') await contracts.openSuspension(input.organisationId, input.contractId, today);
        if (input.to === 'ended' || input.to === 'terminated') await contracts.endBy(input.contractId, today);
        await recordEvent(trx, input.organisationId, domainEvent(contractEventOf(input.from, input.to), (await contracts.find(input.organisationId, input.contractId))!));
      });
    },

    /**
     * Records the milestone as achieved and creates its draft invoice, once: a second call returns the
     * invoice of the first.
     */
    async achieveMilestone(input: AchieveMilestoneInput): Promise<{ invoiceId: string }> {
      return db.transaction(async (trx) => {
        const contracts = contractsIn(trx);
        const milestone = orNotFound(await contracts.lockMilestone(input.organisationId, input.contractId, input.milestoneId), 'Milestone');
        if (milestone.invoice_id) return { invoiceId: milestone.invoice_id };
        const draft: NewInvoice & { data: Record<string, unknown> } = {
          organisationId: input.organisationId,
          customerId: milestone.customer_id,
          contractId: input.contractId,
          contractPlanId: milestone.contract_plan_id,
          currency: milestone.currency,
          date: await customerToday(trx, input.organisationId, milestone.customer_id),
          data: { milestoneId: milestone.id },
          items: [
            {
              planItemId: milestone.plan_item_id,
              title: milestone.name,
              description: 'Milestone achieved',
              quantity: '1',
              price: await milestoneAmount(trx, input.organisationId, milestone),
            },
          ],
        };
        const invoice = await invoicesIn(trx).create(draft);
        await contracts.markMilestoneAchieved(milestone.id, invoice.id);
        await recordEvent(trx, input.organisationId, domainEvent('milestone.achieved', {
          contractId: input.contractId,
          milestone: await contracts.milestone(input.organisationId, milestone.contract_plan_id, milestone.id),
          invoice: await invoicesIn(trx).find(input.organisationId, invoice.id),
        }));
        return { invoiceId: invoice.id };
      });
    },
  };
}

export type ContractLifecycleService = ReturnType<typeof createContractLifecycleService>;
