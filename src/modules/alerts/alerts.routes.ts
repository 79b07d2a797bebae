import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deleted, deletedSchema, idParam } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { alertListQuery, alertSchema, alertTriggerListQuery, alertTriggerSchema, createAlertBody, updateAlertBody } from './alerts.schemas';

const TAG = 'Alerts';
const manage = requires('AlertService:manageAlerts');
const read = requires('AlertService:getAlerts');

export function alertRoutes(deps: AppDeps): Route[] {
  const { alerts } = deps.services;
  return [
    defineRoute({
      method: 'post',
      path: '/alerts',
      summary: "Create an alert on a customer's or a contract's usage, spend or credit balance: each threshold fires alert.triggered once (per period when it recurs)",
      tag: TAG,
      access: manage,
      body: createAlertBody,
      response: alertSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => alerts.create(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/alerts',
      summary: 'List alerts, newest first',
      tag: TAG,
      access: read,
      query: alertListQuery,
      response: pageOf(alertSchema),
      handler: async ({ query, auth }) => alerts.list(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/alerts/{id}',
      summary: 'Read an alert',
      tag: TAG,
      access: read,
      params: idParam,
      response: alertSchema,
      handler: async ({ params, auth }) => alerts.get(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/alerts/{id}',
      summary: "Change an alert's name or thresholds (new thresholds are evaluated at once; those fired stay fired)",
      tag: TAG,
      access: manage,
      params: idParam,
      body: updateAlertBody,
      response: alertSchema,
      handler: async ({ params, body, auth }) => alerts.update(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/alerts/{id}',
      summary: 'Delete an alert and its triggers',
      tag: TAG,
      access: manage,
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await alerts.delete(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/alerts/{id}/triggers',
      summary: "An alert's triggers, newest first: each threshold crossed, the value that crossed it and its period",
      tag: TAG,
      access: read,
      params: idParam,
      query: alertTriggerListQuery,
      response: pageOf(alertTriggerSchema),
      handler: async ({ params, query, auth }) => alerts.triggers(auth.organisationId, params.id, query),
    }),
  ];
}
