import type { Knex } from 'knex';
import type { WorkflowServiceDeps } from '../../temporal/client';
import { addDays } from '../../domain/billing-periods';
import { currencyMinorUnits, isCurrency } from '../../domain/currencies';
import { Decimal } from '../../domain/money';
import { CONTRACT_STATES, allowedContractActions, type ContractAction } from '../../domain/contract-state';
import { AppError, orNotFound } from '../../domain/errors';
import { LAST_DAY } from '../../domain/iso-dates';
import type { Page, PageQuery } from '../../http/paging';
import { plansIn } from '../billing-plans';
import { chargesIn, describeCharge } from '../charges';
import { customersIn, entitiesIn } from '../customers';
import {
  achieveMilestoneUpdate,
  changePlanUpdate,
  contractActionUpdates,
  undoPlanChangeUpdate,
  type ContractWorkflowInput,
} from '../../../workflows/contract.types';
import { contractWorkflowId, searchAttributes } from '../../../workflows/ids';
import { newId } from '../../db/ids';
import { createContractRepository, type Contract, type ContractTaxRecord, type Milestone, type ProgressiveBilling } from './contracts.repository';
import { createPlanChangeRepository, toPlanChange, type PlanChange } from './plan-changes.repository';
import { assertUsageUnshared } from './usage-attribution';

type TaxInput = { name: string; rate: string; appliesTo: 'all' | string[] };
type PlanChangeInput = { fromContractPlanId: string; toPlanId: string; effectiveDate: string; prorate: boolean };
type MilestoneInput = { planItemId: string; name: string; amount?: string; percentage?: string; dueDate?: string };


/** Progressive billing's thresholds are amounts of the contract's currency: no more decimals than it has (400 naming each). */
function assertThresholdsIn(progressive: ProgressiveBilling, currency: string): void {
  const places = currencyMinorUnits(currency);
  const finer = progressive.thresholds.flatMap((threshold, index) => (new Decimal(threshold).decimalPlaces() > places ? [{ path: `body.progressiveBilling.thresholds.${index}`, message: `must have at most ${places} decimal places, as ${currency} amounts do` }] : []));
  if (finer.length > 0) throw AppError.invalid(finer);
}

/**
 * The first day a tax line (or a version of it) is in force: the day given, which must come after every day
 * the contract's ledger has charged (409), else the day after the last day charged, or null (from the
 * contract's start) when nothing is charged yet.
 */
async function taxEffectiveFrom(trx: Knex, contractId: string, given: string | undefined): Promise<string | null> {
  const last = await chargesIn(trx).lastChargedDay(contractId);
  if (given === undefined) return last === undefined ? null : addDays(last, 1);
  if (last !== undefined && given <= last) {
    throw AppError.conflict(`The contract's invoices have charged its days up to ${last} with its taxes as they were: a tax can change from ${addDays(last, 1)} on, not from ${given}`);
  }
  return given;
}

/** The contract's lifecycle runs in its workflow; every other field is plain data. */
export function createContractService(deps: WorkflowServiceDeps) {
  const contracts = createContractRepository(deps.db);
  const plans = plansIn(deps.db);
  const customers = customersIn(deps.db);
  const planChanges = createPlanChangeRepository(deps.db);
  const { workflows } = deps.temporal;

  function startOptions(organisationId: string, contract: Contract) {
    return {
      workflowId: contractWorkflowId(contract.id),
      // The state recorded in Postgres: a workflow started again after its first run ended or was terminated
      // goes on from there.
      args: [{ contractId: contract.id, organisationId, customerId: contract.customerId, state: contract.status }] as [ContractWorkflowInput],
      ...searchAttributes({ organisationId, customerId: contract.customerId, contractId: contract.id }),
    };
  }

  async function requireContract(organisationId: string, id: string): Promise<Contract> {
    return orNotFound(await contracts.find(organisationId, id), 'Contract');
  }

  async function requirePlan(organisationId: string, contractId: string, contractPlanId: string) {
    await requireContract(organisationId, contractId);
    return orNotFound(await contracts.contractPlan(organisationId, contractId, contractPlanId), 'Contract plan');
  }

  /** A contract that has ended has no workflow left to ask: refuse instead of starting a new one. */
  function assertOpen(contract: Contract, what: string): void {
    if (contract.status === 'ended' || contract.status === 'terminated') throw AppError.conflict(`cannot ${what} a contract that is ${contract.status}`);
  }

  async function achieveMilestone(organisationId: string, contractId: string, milestoneId: string): Promise<string> {
    const contract = await requireContract(organisationId, contractId);
    assertOpen(contract, 'achieve milestones of');
    const { invoiceId } = await deps.temporal.bounded(
      () => workflows.executeUpdateWithStart(achieveMilestoneUpdate, { args: [{ milestoneId }], startWorkflowOperation: withStart(organisationId, contract) }),
      'update',
    );
    return invoiceId;
  }

  /** The contract's workflow, started if it is not running (a contract whose workflow ended goes on from Postgres). */
  function withStart(organisationId: string, contract: Contract) {
    return workflows.withStart('contractWorkflow', { ...startOptions(organisationId, contract), workflowIdConflictPolicy: 'USE_EXISTING' });
  }

  /** A tax applies to items of the contract's own plans: any other id is as unknown as a missing one. */
  async function assertTaxTargets(organisationId: string, contract: Contract, tax: TaxInput): Promise<void> {
    if (tax.appliesTo === 'all') return;
    const wanted = [...new Set(tax.appliesTo)];
    const known = await plans.itemIdsAmong(organisationId, contract.plans.map((plan) => plan.planId), wanted);
    if (known.length !== wanted.length) throw AppError.notFound('Plan item');
  }

  return {
    requireContract,
    achieveMilestone,

    async list(organisationId: string, filter: { customerId?: string; status?: Contract['status'] }, paging: PageQuery): Promise<Page<Contract>> {
      return contracts.list(organisationId, filter, paging);
    },

    async update(organisationId: string, id: string, changes: { name?: string; endDate?: string | null; progressiveBilling?: ProgressiveBilling | null }): Promise<Contract> {
      await deps.db.transaction(async (trx) => {
        const locked = createContractRepository(trx);
        await locked.lockMany(organisationId, [id]);
        // Read under the lock: its plans' ends are what a run or a plan change left them.
        const contract = orNotFound(await locked.find(organisationId, id), 'Contract');
        // Ended is final: a new end would bill days after it again.
        if (changes.endDate !== undefined && changes.endDate !== contract.endDate) assertOpen(contract, 'change the end of');
        if (changes.progressiveBilling !== undefined) assertOpen(contract, 'change the progressive billing of');
        if (changes.progressiveBilling) assertThresholdsIn(changes.progressiveBilling, contract.currency);
        // ISO calendar days compare as text.
        if (changes.endDate && changes.endDate < contract.startDate) throw AppError.validation(`must not be before the contract's startDate ${contract.startDate}`, 'body.endDate');
        if (changes.endDate !== undefined && changes.endDate !== contract.endDate) {
          // The plans that end with the contract move with it: those ending on its end, and those kept at their
          // first day because it came to end before them. A plan a standing change ended keeps its end, even
          // one the contract's end has come to meet: its days from the change on belong to the new plan.
          const cut = new Set<string>();
          for (const plan of contract.plans) if ((await createPlanChangeRepository(trx).standingFrom(plan.id)).length > 0) cut.add(plan.id);
          const endedBefore = (plan: Contract['plans'][number]) => contract.endDate !== null && contract.endDate < plan.startDate && plan.endDate === plan.startDate;
          const following = contract.plans.filter((plan) => !cut.has(plan.id) && (plan.endDate === contract.endDate || endedBefore(plan)));
          // No day after the calendar's last can have been charged.
          if (changes.endDate !== null && changes.endDate < LAST_DAY) {
            const charge = await chargesIn(trx).firstChargedFrom({ contractPlanIds: contract.plans.map((plan) => plan.id) }, addDays(changes.endDate, 1));
            if (charge) throw AppError.conflict(`${describeCharge(charge)}: the contract cannot end before ${charge.to}`);
          }
          for (const plan of following) await locked.setPlanEnd(plan.id, changes.endDate === null ? null : changes.endDate < plan.startDate ? plan.startDate : changes.endDate);
        }
        if (!(await locked.update(organisationId, id, changes))) throw AppError.notFound('Contract');
        // Days added to an open contract's plans may be days another contract of the customer bills the usage of.
        const later = changes.endDate !== undefined && contract.endDate !== null && (changes.endDate === null || changes.endDate > contract.endDate);
        if (later && (contract.status === 'active' || contract.status === 'suspended')) {
          await assertUsageUnshared(trx, organisationId, id, contract.plans.map((plan) => plan.id));
        }
      });
      return requireContract(organisationId, id);
    },

    async create(organisationId: string, input: Parameters<typeof contracts.create>[1]): Promise<Contract> {
      if (!isCurrency(input.currency)) throw AppError.validation(`${input.currency} is not an ISO 4217 currency`, 'body.currency');
      if (input.progressiveBilling) assertThresholdsIn(input.progressiveBilling, input.currency);
      // A plan's days are the contract's: a plan from before its start would bill days the contract never had.
      const outside = input.plans.flatMap((plan, index) => [
        ...(plan.startDate !== undefined && plan.startDate < input.startDate ? [{ path: `body.plans.${index}.startDate`, message: `must not be before the contract's startDate ${input.startDate}` }] : []),
        ...(plan.startDate !== undefined && input.endDate && plan.startDate > input.endDate ? [{ path: `body.plans.${index}.startDate`, message: `must not be after the contract's endDate ${input.endDate}` }] : []),
        ...(plan.endDate !== undefined && input.endDate && plan.endDate > input.endDate ? [{ path: `body.plans.${index}.endDate`, message: `must not be after the contract's endDate ${input.endDate}` }] : []),
      ]);
      if (outside.length > 0) throw AppError.invalid(outside);
      orNotFound(await customers.findById(organisationId, input.customerId), 'Customer');
      const planIds = [...new Set(input.plans.map((plan) => plan.planId))];
      const found = await plans.currencies(organisationId, planIds);
      if (found.length !== planIds.length) throw AppError.notFound('Billing plan');
      // One contract, one currency: its invoices are priced from its plans without any conversion.
      const foreign = found.filter((plan) => plan.currency !== input.currency);
      if (foreign.length > 0) {
        throw AppError.invalid(
          foreign.map((plan) => ({
            path: `body.plans.${input.plans.findIndex((p) => p.planId === plan.id)}.planId`,
            message: `the plan is priced in ${plan.currency}, the contract in ${input.currency}`,
          })),
        );
      }
      // A plan bills the usage of the customer's own entities only.
      const named = input.plans.flatMap((plan, i) => (plan.customerEntityIds ?? []).map((entityId, j) => ({ entityId, path: `body.plans.${i}.customerEntityIds.${j}` })));
      if (named.length > 0) {
        const own = new Set(await entitiesIn(deps.db).customerEntityIds(organisationId, input.customerId));
        const foreignEntities = named.filter((entry) => !own.has(entry.entityId));
        if (foreignEntities.length > 0) throw AppError.invalid(foreignEntities.map((entry) => ({ path: entry.path, message: 'is not an entity of the customer' })));
      }
      const contract = await contracts.create(organisationId, input);
      try {
        await deps.temporal.bounded(() => workflows.start('contractWorkflow', { ...startOptions(organisationId, contract), workflowIdConflictPolicy: 'USE_EXISTING' }));
      } catch (error) {
        // The contract is whole in Postgres; its first transition starts the workflow (update-with-start).
        if (!(error instanceof AppError && error.kind === 'unavailable')) throw error;
      }
      return contract;
    },

    async transition(organisationId: string, id: string, action: ContractAction): Promise<Contract> {
      const contract = await requireContract(organisationId, id);
      assertOpen(contract, action);
      await deps.temporal.bounded(() => workflows.executeUpdateWithStart(contractActionUpdates[action], { startWorkflowOperation: withStart(organisationId, contract) }), 'update');
      return requireContract(organisationId, id);
    },

    async createMilestone(organisationId: string, contractId: string, contractPlanId: string, input: MilestoneInput): Promise<Milestone> {
      const { currency } = await requireContract(organisationId, contractId);
      // Invoiced as given: an amount finer than the currency (10.5 JPY) would be rounded on the invoice.
      const places = currencyMinorUnits(currency);
      if (input.amount !== undefined && new Decimal(input.amount).decimalPlaces() > places) {
        throw AppError.validation(`must have at most ${places} decimal places, as ${currency} amounts do`, 'body.amount');
      }
      const plan = await requirePlan(organisationId, contractId, contractPlanId);
      if (!(await plans.itemBelongs(organisationId, plan.plan_id, input.planItemId))) throw AppError.notFound('Plan item');
      return contracts.createMilestone(organisationId, { contractId, contractPlanId, ...input });
    },

    async milestones(organisationId: string, contractId: string, contractPlanId: string): Promise<Milestone[]> {
      await requirePlan(organisationId, contractId, contractPlanId);
      return contracts.milestones(organisationId, contractPlanId);
    },

    async deleteMilestone(organisationId: string, contractId: string, contractPlanId: string, milestoneId: string): Promise<void> {
      await requirePlan(organisationId, contractId, contractPlanId);
      const outcome = orNotFound(await contracts.deleteMilestone(organisationId, contractPlanId, milestoneId), 'Milestone');
      if (outcome === 'achieved') throw AppError.conflict('An achieved milestone has its invoice; it cannot be removed');
    },

    /** The milestone as it stands once achieved (its invoice created by the contract's workflow). */
    async achievePlanMilestone(organisationId: string, contractId: string, contractPlanId: string, milestoneId: string): Promise<Milestone> {
      await requirePlan(organisationId, contractId, contractPlanId);
      const milestone = () => contracts.milestone(organisationId, contractPlanId, milestoneId);
      orNotFound(await milestone(), 'Milestone');
      await achieveMilestone(organisationId, contractId, milestoneId);
      return orNotFound(await milestone(), 'Milestone');
    },

    /** A tax line from the day given, else from the first day its contract's ledger has not charged. */
    async createTax(organisationId: string, contractId: string, tax: TaxInput & { effectiveDate?: string }): Promise<ContractTaxRecord> {
      await assertTaxTargets(organisationId, await requireContract(organisationId, contractId), tax);
      return deps.db.transaction(async (trx) => createContractRepository(trx).createTax(organisationId, contractId, tax, await taxEffectiveFrom(trx, contractId, tax.effectiveDate)));
    },

    async taxes(organisationId: string, contractId: string): Promise<ContractTaxRecord[]> {
      await requireContract(organisationId, contractId);
      return contracts.taxes(organisationId, contractId);
    },

    /**
     * A tax line's change is a version of it from a day no invoice has charged yet (given, else the first
     * after every day charged), replacing the versions from that day on: the days charged keep the tax they
     * were charged with, so a later correction of them is taxed as they were.
     */
    async updateTax(organisationId: string, contractId: string, taxId: string, tax: TaxInput & { effectiveDate?: string }): Promise<ContractTaxRecord> {
      await assertTaxTargets(organisationId, await requireContract(organisationId, contractId), tax);
      return deps.db.transaction(async (trx) => {
        const repository = createContractRepository(trx);
        if ((await repository.lockTaxLine(organisationId, contractId, taxId)).length === 0) throw AppError.notFound('Contract tax');
        return repository.versionTax(organisationId, contractId, taxId, tax, await taxEffectiveFrom(trx, contractId, tax.effectiveDate));
      });
    },

    /** Changes a plan of the contract through its workflow (see docs/adjustments.md, "Plan changes"). */
    async changePlan(organisationId: string, contractId: string, input: PlanChangeInput): Promise<PlanChange> {
      const contract = await requireContract(organisationId, contractId);
      assertOpen(contract, 'change the plans of');
      // The id is chosen here, so that the workflow's step, retried, finds the change it made.
      const request = { planChangeId: newId('pch'), ...input };
      return deps.temporal.bounded(() => workflows.executeUpdateWithStart(changePlanUpdate, { args: [request], startWorkflowOperation: withStart(organisationId, contract) }), 'update');
    },

    /** Undoes a change no invoice has credited yet. */
    async undoPlanChange(organisationId: string, contractId: string, planChangeId: string): Promise<PlanChange> {
      const contract = await requireContract(organisationId, contractId);
      orNotFound(await planChanges.find(organisationId, contractId, planChangeId), 'Plan change');
      assertOpen(contract, 'undo the plan changes of');
      return deps.temporal.bounded(() => workflows.executeUpdateWithStart(undoPlanChangeUpdate, { args: [{ planChangeId }], startWorkflowOperation: withStart(organisationId, contract) }), 'update');
    },

    async planChanges(organisationId: string, contractId: string, paging: PageQuery): Promise<Page<PlanChange>> {
      const contract = await requireContract(organisationId, contractId);
      const page = await planChanges.list(organisationId, contractId, paging);
      return { ...page, items: page.items.map((row) => toPlanChange(row, contract.currency)) };
    },

    async planChange(organisationId: string, contractId: string, planChangeId: string): Promise<PlanChange> {
      const contract = await requireContract(organisationId, contractId);
      return toPlanChange(orNotFound(await planChanges.find(organisationId, contractId, planChangeId), 'Plan change'), contract.currency);
    },

    async lifecycle(organisationId: string, id: string) {
      const contract = await requireContract(organisationId, id);
      return { state: contract.status, states: [...CONTRACT_STATES], allowedActions: allowedContractActions(contract.status), transitions: 0 };
    },
  };
}

export type ContractService = ReturnType<typeof createContractService>;
