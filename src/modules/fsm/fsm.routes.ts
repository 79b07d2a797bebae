import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { RENDERS_TEMPLATES, documented } from '../../http/openapi';
import { pageOf, pageQuery } from '../../http/paging';
import { CONTRACT_ACTIONS, CONTRACT_STATES } from '../../domain/contract-state';
import { INVOICE_STATES } from '../../domain/invoice-state';
import { freeText, idParam, isoDateOrDateTime, reference, text, timestamps } from '../../http/schemas';
import { defineRoute, requires, type Route } from '../../http/route';
import { contractSchema } from '../contracts';
import { invoiceSchema } from '../invoices';

const objectParams = z.object({ objectType: z.enum(['invoice', 'contract']), id: reference() });

const lifecycleSchema = z.object({
  objectType: z.string(),
  id: z.string(),
  state: z.string(),
  states: z.array(z.string()),
  allowedActions: z.array(z.string()),
  transitions: z.number().int().describe('transitions that undo can revert, latest first'),
});

/** Each custom state stands for a built-in state, each custom transition runs a built-in action. */
function machineOf<T extends string>(objectType: T, states: readonly [string, ...string[]], actions: readonly [string, ...string[]]) {
  return z.object({
    objectType: z.literal(objectType),
    name: text(100),
    states: z.array(z.object({ name: text(100), builtIn: z.enum(states) })).min(1).max(50),
    transitions: z
      .array(z.object({ action: text(100), from: text(100).describe('a state of this machine'), to: text(100).describe('a state of this machine'), effect: z.enum(actions) }))
      .max(100),
  });
}

const machineBody = z.discriminatedUnion('objectType', [
  machineOf('invoice', INVOICE_STATES, ['raise', 'send', 'markPaid', 'cancel']),
  machineOf('contract', CONTRACT_STATES, CONTRACT_ACTIONS),
]);

const machineSchema = z.object({
  id: z.string(),
  objectType: z.enum(['invoice', 'contract']),
  name: z.string(),
  states: z.array(z.object({ name: z.string(), builtIn: z.string() })),
  transitions: z.array(z.object({ action: z.string(), from: z.string(), to: z.string(), effect: z.string() })),
  ...timestamps,
});

const machineQuery = z.object({ machineId: reference().optional().describe('present the lifecycle in a custom machine\'s states and actions') });

const transitionBody = z.object({
  machineId: reference().optional().describe('with a custom machine, action is one of its actions'),
  action: reference(100).describe('an invoice action (raise, send, markPaid, cancel), a contract action, or a custom machine\'s action'),
  paidDate: isoDateOrDateTime.optional().describe('required for markPaid'),
  comments: freeText(5000).optional(),
});

/**
 * The generic lifecycle endpoints (docs/decisions.md), backed by each object's workflow: its states, the
 * actions allowed now, a transition, and undo of the latest transition. An illegal one answers 409.
 */
export function fsmRoutes(deps: AppDeps): Route[] {
  const { fsm } = deps.services;

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
      handler: async ({ body, auth }) => fsm.createMachine(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/fsm/machines',
      summary: 'List the custom machines (the built-in lifecycles need none)',
      tag: 'FSM',
      access: requires('FsmService:getMachines'),
      query: pageQuery,
      response: pageOf(machineSchema),
      handler: async ({ query, auth }) => fsm.listMachines(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/fsm/machines/{id}',
      summary: 'Read a custom machine',
      tag: 'FSM',
      access: requires('FsmService:getMachines'),
      params: idParam,
      response: machineSchema,
      handler: async ({ params, auth }) => fsm.getMachine(auth.organisationId, params.id),
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
      handler: async ({ params, query, auth }) => fsm.lifecycle(auth.organisationId, params.objectType, params.id, query.machineId),
    }),
    defineRoute({
      method: 'get',
      path: '/fsm/{objectType}/{id}/actions',
      summary: 'The actions allowed now',
      tag: 'FSM',
      access: requires('FsmService:getActions'),
      params: objectParams,
      query: machineQuery,
      response: z.object({
        objectType: z.string(),
        id: z.string(),
        state: z.string(),
        allowedActions: z
          .array(z.string())
          .describe("the actions the lifecycle's state machine takes from this state; a money rule may still refuse one with 409 (a payment a gateway collected is taken back by a refund note, not by cancel or undo; an invoice with credit notes that count is not cancelled)"),
      }),
      handler: async ({ params, query, auth }) => {
        const { objectType, id, state, allowedActions } = await fsm.lifecycle(auth.organisationId, params.objectType, params.id, query.machineId);
        return { objectType, id, state, allowedActions };
      },
    }),
    documented(
      defineRoute({
        method: 'post',
        path: '/fsm/{objectType}/{id}/transition',
        summary: 'Run an action; an illegal one answers 409 and changes nothing',
        tag: 'FSM',
        access: requires('FsmService:transition'),
        params: objectParams,
        body: transitionBody,
        response: z.union([invoiceSchema, contractSchema]),
        handler: async ({ params, body, auth }) => fsm.transition(auth.organisationId, params.objectType, params.id, body),
      }),
      RENDERS_TEMPLATES,
    ),
    defineRoute({
      method: 'post',
      path: '/fsm/{objectType}/{id}/undo',
      summary: 'Revert the latest transition by running its compensation',
      tag: 'FSM',
      access: requires('FsmService:undoTransition'),
      params: objectParams,
      response: invoiceSchema,
      handler: async ({ params, auth }) => fsm.undo(auth.organisationId, params.objectType, params.id),
    }),
  ];
}
