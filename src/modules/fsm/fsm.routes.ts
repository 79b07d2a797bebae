import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { CONTRACT_ACTIONS, type ContractAction } from '../../domain/contract-state';
import { INVOICE_ACTIONS, type InvoiceAction } from '../../domain/invoice-state';
import { contractSchema } from '../contracts/contracts.schemas';
import { createContractService } from '../contracts/contracts.service';
import { checkMachine } from '../../domain/fsm-machine';
import { isUniqueViolation } from '../../db/knex';
import { newId } from '../../db/ids';
import { AppError, ERROR_CODES } from '../../domain/errors';
import { paginate, pageOf, pageQuery } from '../../http/paging';
import { idParam, timestamps } from '../../http/schemas';
import { defineRoute, requires, type Route } from '../../http/route';
import { resolveContractPlan } from '../contracts/contract-plans.repository';
import { invoiceSchema } from '../invoices/invoices.schemas';
import { createInvoiceService } from '../invoices/invoices.service';

const objectParams = z.object({ objectType: z.enum(['invoice', 'contract']), id: z.string().min(1).max(64) });

const lifecycleSchema = z.object({
  objectType: z.string(),
  id: z.string(),
  state: z.string(),
  states: z.array(z.string()),
  allowedActions: z.array(z.string()),
  transitions: z.number().int().describe('transitions that undo can revert, latest first'),
});

const machineBody = z.object({
  objectType: z.enum(['invoice', 'contract']),
  name: z.string().trim().min(1).max(100),
  states: z.array(z.object({ name: z.string().trim().min(1).max(100), builtIn: z.string() })).min(1).max(50),
  transitions: z.array(z.object({ action: z.string().trim().min(1).max(100), from: z.string(), to: z.string(), effect: z.string() })).max(100),
});

const machineSchema = machineBody.extend({ id: z.string(), ...timestamps });

interface MachineRow {
  id: string;
  object_type: 'invoice' | 'contract';
  name: string;
  states: z.output<typeof machineBody>['states'];
  transitions: z.output<typeof machineBody>['transitions'];
  created_at: Date;
  updated_at: Date;
}

const toMachine = (row: MachineRow) => ({
  id: row.id,
  objectType: row.object_type,
  name: row.name,
  states: row.states,
  transitions: row.transitions,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const machineQuery = z.object({ machineId: z.string().optional().describe('present the lifecycle in a custom machine\'s states and actions') });

const transitionBody = z.object({
  machineId: z.string().optional().describe('with a custom machine, action is one of its actions'),
  action: z.string().min(1).max(100).describe('an invoice action (raise, send, markPaid, cancel), a contract action, or a custom machine\'s action'),
  paidDate: z.iso.datetime({ offset: true }).or(z.iso.date()).optional().describe('required for markPaid'),
  comments: z.string().max(5000).optional(),
});

/**
 * The generic lifecycle endpoints (DESIGN section 4), backed by each object's workflow: its states, the
 * actions allowed now, a transition, and undo of the latest transition. An illegal one answers 409.
 */
export function fsmRoutes(deps: AppDeps): Route[] {
  const invoices = createInvoiceService(deps, resolveContractPlan);
  const contracts = createContractService(deps);

  async function findMachine(organisationId: string, objectType: 'invoice' | 'contract', machineId: string): Promise<MachineRow> {
    const row = await deps.db('fsm_machines').where({ organisation_id: organisationId, id: machineId }).first<MachineRow | undefined>();
    if (!row) throw AppError.notFound('Machine');
    if (row.object_type !== objectType) throw AppError.validation(`the machine is for ${row.object_type}s`, 'query.machineId');
    return row;
  }

  /** The built-in lifecycle, or the same seen through a custom machine's names. */
  async function lifecycle(organisationId: string, objectType: 'invoice' | 'contract', id: string, machineId?: string) {
    const view = objectType === 'invoice' ? await invoices.lifecycle(organisationId, id) : await contracts.lifecycle(organisationId, id);
    const builtIn = { objectType, id, state: view.state, states: [...view.states], allowedActions: view.allowedActions, transitions: view.transitions };
    if (!machineId) return builtIn;
    const machine = await findMachine(organisationId, objectType, machineId);
    const current = machine.states.filter((state) => state.builtIn === view.state).map((state) => state.name);
    return {
      ...builtIn,
      state: current[0] ?? view.state,
      states: machine.states.map((state) => state.name),
      allowedActions: machine.transitions.filter((t) => current.includes(t.from) && (view.allowedActions as readonly string[]).includes(t.effect)).map((t) => t.action),
    };
  }

  return [
    defineRoute({
      method: 'post',
      path: '/fsm/machines',
      summary: 'Define a custom lifecycle machine: its own states and actions, each bound to a built-in one',
      tag: 'FSM',
      access: requires('FsmService:createMachine'),
      body: machineBody,
      response: machineSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => {
        const problems = checkMachine(body);
        if (problems.length) throw new AppError('validation', 'Validation failed', problems.map((p) => ({ code: ERROR_CODES.validation, ...p })));
        const [row] = await deps
          .db('fsm_machines')
          .insert({ id: newId('fsm'), organisation_id: auth.organisationId, object_type: body.objectType, name: body.name, states: JSON.stringify(body.states), transitions: JSON.stringify(body.transitions) })
          .returning<MachineRow[]>('*')
          .catch((error: unknown) => {
            if (isUniqueViolation(error)) throw AppError.conflict('A machine with this name exists for this object type');
            throw error;
          });
        return toMachine(row!);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/fsm/machines',
      summary: 'List the custom machines (the built-in lifecycles need none)',
      tag: 'FSM',
      access: requires('FsmService:getMachines'),
      query: pageQuery,
      response: pageOf(machineSchema),
      handler: async ({ query, auth }) => paginate(deps.db('fsm_machines').where({ organisation_id: auth.organisationId }).select('*'), query, { searchColumns: ['name'], map: toMachine }),
    }),
    defineRoute({
      method: 'get',
      path: '/fsm/machines/{id}',
      summary: 'Read a custom machine',
      tag: 'FSM',
      access: requires('FsmService:getMachines'),
      params: idParam,
      response: machineSchema,
      handler: async ({ params, auth }) => {
        const row = await deps.db('fsm_machines').where({ organisation_id: auth.organisationId, id: params.id }).first<MachineRow | undefined>();
        if (!row) throw AppError.notFound('Machine');
        return toMachine(row);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/fsm/{objectType}/{id}/states',
      summary: "An object's current state, all its states and how many transitions undo can revert",
      tag: 'FSM',
      access: requires('FsmService:getStates'),
      params: objectParams,
      query: machineQuery,
      response: lifecycleSchema,
      handler: async ({ params, query, auth }) => lifecycle(auth.organisationId, params.objectType, params.id, query.machineId),
    }),
    defineRoute({
      method: 'get',
      path: '/fsm/{objectType}/{id}/actions',
      summary: 'The actions allowed now',
      tag: 'FSM',
      access: requires('FsmService:getActions'),
      params: objectParams,
      query: machineQuery,
      response: z.object({ objectType: z.string(), id: z.string(), state: z.string(), allowedActions: z.array(z.string()) }),
      handler: async ({ params, query, auth }) => {
        const { objectType, id, state, allowedActions } = await lifecycle(auth.organisationId, params.objectType, params.id, query.machineId);
        return { objectType, id, state, allowedActions };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/fsm/{objectType}/{id}/transition',
      summary: 'Run an action; an illegal one answers 409 and changes nothing',
      tag: 'FSM',
      access: requires('FsmService:transition'),
      params: objectParams,
      body: transitionBody,
      response: z.union([invoiceSchema, contractSchema]),
      handler: async ({ params, body: input, auth }) => {
        const body = { ...input };
        if (input.machineId) {
          // A custom action runs its built-in effect, from a state the machine maps to the current one.
          const machine = await findMachine(auth.organisationId, params.objectType, input.machineId);
          const view = await lifecycle(auth.organisationId, params.objectType, params.id, input.machineId);
          const transition = machine.transitions.find((t) => t.action === input.action && t.from === view.state);
          if (!transition) throw AppError.conflict(`${input.action} is not allowed from ${view.state}`);
          body.action = transition.effect;
        }
        const known = [...INVOICE_ACTIONS.filter((action) => action !== 'undo'), ...CONTRACT_ACTIONS] as string[];
        if (!known.includes(body.action)) throw AppError.validation(`unknown action ${body.action}`, 'body.action');
        const isContractAction = (CONTRACT_ACTIONS as readonly string[]).includes(body.action);
        if (isContractAction !== (params.objectType === 'contract')) {
          throw AppError.validation(`${body.action} is not an action of a ${params.objectType}`, 'body.action');
        }
        if (params.objectType === 'contract') return contracts.transition(auth.organisationId, params.id, body.action as ContractAction);
        if (body.action === 'markPaid' && !body.paidDate) throw AppError.validation('paidDate is required for markPaid', 'body.paidDate');
        return invoices.transition(auth.organisationId, params.id, body.action as InvoiceAction, { paidDate: body.paidDate, comments: body.comments });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/fsm/{objectType}/{id}/undo',
      summary: 'Revert the latest transition by running its compensation',
      tag: 'FSM',
      access: requires('FsmService:undoTransition'),
      params: objectParams,
      response: invoiceSchema,
      handler: async ({ params, auth }) => {
        if (params.objectType === 'contract') {
          await contracts.requireContract(auth.organisationId, params.id);
          throw AppError.conflict('contract transitions are not undone; use the opposite action (suspend/resume)');
        }
        return invoices.transition(auth.organisationId, params.id, 'undo');
      },
    }),
  ];
}
