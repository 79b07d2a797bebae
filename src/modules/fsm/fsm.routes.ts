import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { CONTRACT_ACTIONS, type ContractAction } from '../../domain/contract-state';
import { INVOICE_ACTIONS, type InvoiceAction } from '../../domain/invoice-state';
import { contractSchema } from '../contracts/contracts.schemas';
import { createContractService } from '../contracts/contracts.service';
import { AppError } from '../../http/errors';
import { defineRoute, requires, type Route } from '../../http/route';
import { resolveContractPlan } from '../invoices/contract-plans';
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

const transitionBody = z.object({
  action: z.enum([...INVOICE_ACTIONS.filter((action) => action !== 'undo'), ...CONTRACT_ACTIONS]).describe('an invoice or a contract action'),
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

  async function lifecycle(organisationId: string, objectType: 'invoice' | 'contract', id: string) {
    const view = objectType === 'invoice' ? await invoices.lifecycle(organisationId, id) : await contracts.lifecycle(organisationId, id);
    return { objectType, id, state: view.state, states: [...view.states], allowedActions: view.allowedActions, transitions: view.transitions };
  }

  return [
    defineRoute({
      method: 'get',
      path: '/fsm/{objectType}/{id}/states',
      summary: "An object's current state, all its states and how many transitions undo can revert",
      tag: 'FSM',
      access: requires('FsmService:getStates'),
      params: objectParams,
      response: lifecycleSchema,
      handler: async ({ params, auth }) => lifecycle(auth.organisationId, params.objectType, params.id),
    }),
    defineRoute({
      method: 'get',
      path: '/fsm/{objectType}/{id}/actions',
      summary: 'The actions allowed now',
      tag: 'FSM',
      access: requires('FsmService:getActions'),
      params: objectParams,
      response: z.object({ objectType: z.string(), id: z.string(), state: z.string(), allowedActions: z.array(z.string()) }),
      handler: async ({ params, auth }) => {
        const { objectType, id, state, allowedActions } = await lifecycle(auth.organisationId, params.objectType, params.id);
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
      handler: async ({ params, body, auth }) => {
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
