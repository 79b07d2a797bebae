import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { CONTRACT_ACTIONS } from '../../domain/contract-state';
import { AppError } from '../../domain/errors';
import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam } from '../../http/schemas';
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
import { createContractService } from './contracts.service';

const id = z.string().min(1).max(64);
const planParams = z.object({ contractId: id, contractPlanId: id });
const milestoneParams = planParams.extend({ milestoneId: id });

export function contractRoutes(deps: AppDeps): Route[] {
  const service = createContractService(deps);
  const { contracts } = service;

  async function requirePlan(organisationId: string, contractId: string, contractPlanId: string) {
    await service.requireContract(organisationId, contractId);
    const plan = await contracts.contractPlan(organisationId, contractId, contractPlanId);
    if (!plan) throw AppError.notFound('Contract plan');
    return plan;
  }

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
      handler: async ({ query, auth }) => contracts.list(auth.organisationId, query, query),
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
      handler: async ({ params, body, auth }) => {
        if (!(await contracts.update(auth.organisationId, params.id, body))) throw AppError.notFound('Contract');
        return service.requireContract(auth.organisationId, params.id);
      },
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
      handler: async ({ params, body, auth }) => {
        const plan = await requirePlan(auth.organisationId, params.contractId, params.contractPlanId);
        if (!(await contracts.planItemBelongs(auth.organisationId, plan.plan_id, body.planItemId))) throw AppError.notFound('Plan item');
        return contracts.createMilestone(auth.organisationId, { ...params, ...body });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/contracts/{contractId}/plans/{contractPlanId}/milestones',
      summary: "A contract plan's milestones",
      tag: 'Contracts',
      access: requires('ContractService:getContractById'),
      params: planParams,
      response: z.array(milestoneSchema),
      handler: async ({ params, auth }) => {
        await requirePlan(auth.organisationId, params.contractId, params.contractPlanId);
        return contracts.milestones(auth.organisationId, params.contractPlanId);
      },
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
        await requirePlan(auth.organisationId, params.contractId, params.contractPlanId);
        const outcome = await contracts.deleteMilestone(auth.organisationId, params.contractPlanId, params.milestoneId);
        if (!outcome) throw AppError.notFound('Milestone');
        if (outcome === 'achieved') throw AppError.conflict('An achieved milestone has its invoice; it cannot be removed');
        return { id: params.milestoneId, deleted: true };
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
      handler: async ({ params, auth }) => {
        await requirePlan(auth.organisationId, params.contractId, params.contractPlanId);
        if (!(await contracts.milestone(auth.organisationId, params.contractPlanId, params.milestoneId))) throw AppError.notFound('Milestone');
        await service.achieveMilestone(auth.organisationId, params.contractId, params.milestoneId);
        return (await contracts.milestone(auth.organisationId, params.contractPlanId, params.milestoneId))!;
      },
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
      handler: async ({ params, body, auth }) => {
        await service.requireContract(auth.organisationId, params.contractId);
        return contracts.createTax(auth.organisationId, params.contractId, body);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/contracts/{contractId}/taxes',
      summary: "A contract's tax lines",
      tag: 'Contracts',
      access: requires('ContractService:getContractTaxes'),
      params: z.object({ contractId: id }),
      response: z.array(taxSchema),
      handler: async ({ params, auth }) => {
        await service.requireContract(auth.organisationId, params.contractId);
        return contracts.taxes(auth.organisationId, params.contractId);
      },
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
      handler: async ({ params, body, auth }) => {
        await service.requireContract(auth.organisationId, params.contractId);
        const tax = await contracts.updateTax(auth.organisationId, params.contractId, params.contractTaxId, body);
        if (!tax) throw AppError.notFound('Contract tax');
        return tax;
      },
    }),
  ];
}
