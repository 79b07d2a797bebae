import type { Knex } from 'knex';
import { CONTRACT_ACTIONS, type ContractAction } from '../../domain/contract-state';
import { AppError, orNotFound } from '../../domain/errors';
import { checkMachine } from '../../domain/fsm-machine';
import { INVOICE_ACTIONS, type InvoiceAction } from '../../domain/invoice-state';
import { isUniqueViolation } from '../../db/knex';
import type { Page, PageQuery } from '../../http/paging';
import type { ContractService } from '../contracts';
import type { InvoiceService } from '../invoices';
import { createMachineRepository, toMachine, type Machine, type MachineRow, type NewMachine } from './fsm.repository';

export type LifecycleObjectType = 'invoice' | 'contract';

export interface Lifecycle {
  objectType: LifecycleObjectType;
  id: string;
  state: string;
  states: string[];
  allowedActions: string[];
  transitions: number;
}

export interface TransitionRequest {
  /** With a custom machine, `action` is one of its actions. */
  machineId?: string;
  action: string;
  paidDate?: string;
  comments?: string;
}

const KNOWN_ACTIONS: readonly string[] = [...INVOICE_ACTIONS.filter((action) => action !== 'undo'), ...CONTRACT_ACTIONS];

const duplicateName = (error: unknown): never => {
  if (isUniqueViolation(error)) throw AppError.conflict('A machine with this name exists for this object type');
  throw error;
};

/**
 * The generic lifecycle of invoices and contracts, backed by each object's workflow through its own
 * service, optionally seen through a custom machine's states and actions.
 */
export function createFsmService(deps: { db: Knex; invoices: InvoiceService; contracts: ContractService }) {
  const machines = createMachineRepository(deps.db);
  const { invoices, contracts } = deps;

  async function machineFor(organisationId: string, objectType: LifecycleObjectType, machineId: string): Promise<MachineRow> {
    const machine = orNotFound(await machines.findById(organisationId, machineId), 'Machine');
    if (machine.object_type !== objectType) throw AppError.validation(`the machine is for ${machine.object_type}s`, 'query.machineId');
    return machine;
  }

  /** The built-in lifecycle, or the same seen through a custom machine's names. */
  async function lifecycle(organisationId: string, objectType: LifecycleObjectType, id: string, machineId?: string): Promise<Lifecycle> {
    const view = objectType === 'invoice' ? await invoices.lifecycle(organisationId, id) : await contracts.lifecycle(organisationId, id);
    const builtIn: Lifecycle = { objectType, id, state: view.state, states: [...view.states], allowedActions: [...view.allowedActions], transitions: view.transitions };
    if (!machineId) return builtIn;
    const machine = await machineFor(organisationId, objectType, machineId);
    const current = machine.states.filter((state) => state.builtIn === view.state).map((state) => state.name);
    return {
      ...builtIn,
      state: current[0] ?? view.state,
      states: machine.states.map((state) => state.name),
      allowedActions: machine.transitions.filter((t) => current.includes(t.from) && builtIn.allowedActions.includes(t.effect)).map((t) => t.action),
    };
  }

  /** A custom action stands for its built-in effect, from a state the machine maps to the current one. */
  async function builtInAction(organisationId: string, objectType: LifecycleObjectType, id: string, request: TransitionRequest): Promise<string> {
    if (!request.machineId) return request.action;
    const machine = await machineFor(organisationId, objectType, request.machineId);
    const view = await lifecycle(organisationId, objectType, id, request.machineId);
    const transition = machine.transitions.find((t) => t.action === request.action && t.from === view.state);
    if (!transition) throw AppError.conflict(`${request.action} is not allowed from ${view.state}`);
    return transition.effect;
  }

  return {
    /** A machine can never describe a move the built-in lifecycle would refuse. */
    async createMachine(organisationId: string, machine: NewMachine): Promise<Machine> {
      const problems = checkMachine(machine);
      if (problems.length) throw AppError.invalid(problems);
      return toMachine(await machines.create(organisationId, machine).catch(duplicateName));
    },

    async listMachines(organisationId: string, paging: PageQuery): Promise<Page<Machine>> {
      return machines.list(organisationId, paging);
    },

    async getMachine(organisationId: string, id: string): Promise<Machine> {
      return toMachine(orNotFound(await machines.findById(organisationId, id), 'Machine'));
    },

    lifecycle,

    /** An illegal action answers 409 and changes nothing. */
    async transition(organisationId: string, objectType: LifecycleObjectType, id: string, request: TransitionRequest) {
      const action = await builtInAction(organisationId, objectType, id, request);
      if (!KNOWN_ACTIONS.includes(action)) throw AppError.validation(`unknown action ${action}`, 'body.action');
      const isContractAction = (CONTRACT_ACTIONS as readonly string[]).includes(action);
      if (isContractAction !== (objectType === 'contract')) throw AppError.validation(`${action} is not an action of a ${objectType}`, 'body.action');
      if (objectType === 'contract') return contracts.transition(organisationId, id, action as ContractAction);
      if (action === 'markPaid' && !request.paidDate) throw AppError.validation('paidDate is required for markPaid', 'body.paidDate');
      return invoices.transition(organisationId, id, action as InvoiceAction, { paidDate: request.paidDate, comments: request.comments });
    },

    /** Only invoice transitions have compensations; a contract is moved back by the opposite action. */
    async undo(organisationId: string, objectType: LifecycleObjectType, id: string) {
      if (objectType === 'contract') {
        await contracts.requireContract(organisationId, id);
        throw AppError.conflict('contract transitions are not undone; use the opposite action (suspend/resume)');
      }
      return invoices.transition(organisationId, id, 'undo');
    },
  };
}

export type FsmService = ReturnType<typeof createFsmService>;
