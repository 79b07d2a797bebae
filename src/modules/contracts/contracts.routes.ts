import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { CONTRACT_ACTIONS } from '../../domain/contract-state';
import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted, reference } from '../../http/schemas';
import {
  contractListQuery,
  contractSchema,
  createContractBody,
  createMilestoneBody,
  milestoneSchema,
  taxBody,
  taxSchema,
  updateContractBody,
} from './contracts.schemas';

const id = reference();
const planParams = z.object({ contractId: id, contractPlanId: id });
const milestoneParams = planParams.extend({ milestoneId: id });

export function contractRoutes(deps: AppDeps): Route[] {
  const service = deps.services.contracts;

  return [
    defineRoute({
      method: 'post',
      path: '/contracts',
      summary: 'Create a draft contract binding a customer to billing plans; starts its lifecycle workflow',
      tag: 'Contracts',
      access: requires('ContractService:createContract'),
      body: createContractBody,
      response: contractSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => service.create(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/contracts',
      summary: 'List contracts',
      tag: 'Contracts',
      access: requires('ContractService:getContracts'),
      query: contractListQuery,
      response: pageOf(contractSchema),
      handler: async ({ query, auth }) => service.list(auth.organisationId, query, query),
    }),
    defineRoute({
      method: 'get',
      path: '/contracts/{id}',
      summary: 'Read a contract with its plans',
      tag: 'Contracts',
      access: requires('ContractService:getContractById'),
      params: idParam,
      response: contractSchema,
      handler: async ({ params, auth }) => service.requireContract(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/contracts/{id}',
      summary: "Change a contract's name or end date (its status changes through its actions)",
      tag: 'Contracts',
      access: requires('ContractService:updateContract'),
      params: idParam,
      body: updateContractBody,
      response: contractSchema,
      handler: async ({ params, body, auth }) => service.update(auth.organisationId, params.id, body),
    }),
    ...CONTRACT_ACTIONS.map((action) =>
      defineRoute({
        method: 'post',
        path: `/contracts/{id}/${action}`,
        summary: `${action[0]!.toUpperCase()}${action.slice(1)} the contract; an illegal transition answers 409 and changes nothing`,
        tag: 'Contracts',
        access: requires('ContractService:updateContract'),
        params: idParam,
        response: contractSchema,
        handler: async ({ params, auth }) => service.transition(auth.organisationId, params.id, action),
      }),
    ),
    defineRoute({
      method: 'post',
      path: '/contracts/{contractId}/plans/{contractPlanId}/milestones',
      summary: 'Add a milestone to a plan item of the contract: a fixed amount or a percentage of the item',
      tag: 'Contracts',
      access: requires('ContractService:createContractPlanItemMilestone', 'ContractService:getContractById', 'FsmService:transition'),
      params: planParams,
      body: createMilestoneBody,
      response: milestoneSchema,
      successStatus: 201,
      handler: async ({ params, body, auth }) => service.createMilestone(auth.organisationId, params.contractId, params.contractPlanId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/contracts/{contractId}/plans/{contractPlanId}/milestones',
      summary: "A contract plan's milestones",
      tag: 'Contracts',
      access: requires('ContractService:getContractById'),
      params: planParams,
      response: z.array(milestoneSchema),
      handler: async ({ params, auth }) => service.milestones(auth.organisationId, params.contractId, params.contractPlanId),
    }),
    defineRoute({
      method: 'delete',
      path: '/contracts/{contractId}/plans/{contractPlanId}/milestones/{milestoneId}',
      summary: 'Remove a milestone not yet achieved (409 once achieved)',
      tag: 'Contracts',
      access: requires('ContractService:deleteContractPlanItemMilestone'),
      params: milestoneParams,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await service.deleteMilestone(auth.organisationId, params.contractId, params.contractPlanId, params.milestoneId);
        return deleted(params.milestoneId);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/contracts/{contractId}/plans/{contractPlanId}/milestones/{milestoneId}/achieve',
      summary: 'Mark a milestone achieved (active contracts only): its draft invoice is created; twice is a no-op',
      tag: 'Contracts',
      access: requires('FsmService:transition'),
      params: milestoneParams,
      response: milestoneSchema,
      handler: async ({ params, auth }) => service.achievePlanMilestone(auth.organisationId, params.contractId, params.contractPlanId, params.milestoneId),
    }),
    defineRoute({
      method: 'post',
      path: '/contracts/{contractId}/taxes',
      summary: 'Add a tax line to a contract, applied to its invoices at raise',
      tag: 'Contracts',
      access: requires('ContractService:createContractTax'),
      params: z.object({ contractId: id }),
      body: taxBody,
      response: taxSchema,
      successStatus: 201,
      handler: async ({ params, body, auth }) => service.createTax(auth.organisationId, params.contractId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/contracts/{contractId}/taxes',
      summary: "A contract's tax lines",
      tag: 'Contracts',
      access: requires('ContractService:getContractTaxes'),
      params: z.object({ contractId: id }),
      response: z.array(taxSchema),
      handler: async ({ params, auth }) => service.taxes(auth.organisationId, params.contractId),
    }),
    defineRoute({
      method: 'put',
      path: '/contracts/{contractId}/taxes/{contractTaxId}',
      summary: 'Update a tax line on a contract (Admin only)',
      tag: 'Contracts',
      access: requires('ContractService:updateContractTax'),
      params: z.object({ contractId: id, contractTaxId: id }),
      body: taxBody,
      response: taxSchema,
      handler: async ({ params, body, auth }) => service.updateTax(auth.organisationId, params.contractId, params.contractTaxId, body),
    }),
  ];
}
