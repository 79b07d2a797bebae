import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { pageOf, pageQuery } from '../../http/paging';
import { idParam, timestamps } from '../../http/schemas';
import { defineRoute, requires, type Route } from '../../http/route';
import { contractSchema } from '../contracts/contracts.schemas';
import { invoiceSchema } from '../invoices/invoices.schemas';

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

const machineQuery = z.object({ machineId: z.string().optional().describe('present the lifecycle in a custom machine\'s states and actions') });

const transitionBody = z.object({
  machineId: z.string().optional().describe('with a custom machine, action is one of its actions'),
  action: z.string().min(1).max(100).describe('an invoice action (raise, send, markPaid, cancel), a contract action, or a custom machine\'s action'),
  paidDate: z.iso.datetime({ offset: true }).or(z.iso.date()).optional().describe('required for markPaid'),
  comments: z.string().max(5000).optional(),
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
      response: z.object({ objectType: z.string(), id: z.string(), state: z.string(), allowedActions: z.array(z.string()) }),
      handler: async ({ params, query, auth }) => {
        const { objectType, id, state, allowedActions } = await fsm.lifecycle(auth.organisationId, params.objectType, params.id, query.machineId);
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
      handler: async ({ params, body, auth }) => fsm.transition(auth.organisationId, params.objectType, params.id, body),
    }),
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
