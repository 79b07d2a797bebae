import { documented } from '../../http/openapi';
import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { createEndpointBody, deliveryQuery, deliverySchema, endpointSchema, endpointWithSecretSchema, triggerBody, triggerSchema, updateEndpointBody } from './webhooks.schemas';

const TAG = 'Webhooks';
/** Where an organisation's events go, and with which secret, is an Admin's decision. */
const manage = requires('WebhookService:manageEndpoints');

export function webhookRoutes(deps: AppDeps): Route[] {
  const { webhooks, webhookDeliveries } = deps.services;

  return [
    defineRoute({
      method: 'post',
      path: '/webhooks/endpoints',
      summary: 'Add a webhook endpoint; the answer shows its signing secret, this once (Admin only)',
      tag: TAG,
      access: manage,
      body: createEndpointBody,
      response: endpointWithSecretSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => webhooks.createEndpoint(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks/endpoints',
      summary: 'List webhook endpoints (Admin only)',
      tag: TAG,
      access: manage,
      query: pageQuery,
      response: pageOf(endpointSchema),
      handler: async ({ query, auth }) => webhooks.listEndpoints(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks/endpoints/{id}',
      summary: 'Read a webhook endpoint (Admin only)',
      tag: TAG,
      access: manage,
      params: idParam,
      response: endpointSchema,
      handler: async ({ params, auth }) => webhooks.getEndpoint(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/webhooks/endpoints/{id}',
      summary: 'Change a webhook endpoint: URL, description, event types, enabled (Admin only)',
      tag: TAG,
      access: manage,
      params: idParam,
      body: updateEndpointBody,
      response: endpointSchema,
      handler: async ({ params, body, auth }) => webhooks.updateEndpoint(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/webhooks/endpoints/{id}',
      summary: 'Delete a webhook endpoint and its deliveries (Admin only)',
      tag: TAG,
      access: manage,
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => webhooks.deleteEndpoint(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'post',
      path: '/webhooks/endpoints/{id}/rotate-secret',
      summary: 'Give an endpoint a new signing secret; the old one keeps signing for 24 hours (Admin only)',
      tag: TAG,
      access: manage,
      params: idParam,
      response: endpointWithSecretSchema,
      handler: async ({ params, auth }) => webhooks.rotateSecret(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks/deliveries',
      summary: 'List deliveries, newest first, with every attempt (Admin only)',
      tag: TAG,
      access: manage,
      query: deliveryQuery,
      response: pageOf(deliverySchema),
      handler: async ({ query, auth }) => webhooks.listDeliveries(auth.organisationId, { endpointId: query.endpointId, status: query.status }, query),
    }),
    defineRoute({
      method: 'post',
      path: '/webhooks/deliveries/{id}/redeliver',
      summary: 'Deliver an event to its endpoint again, on a fresh schedule of attempts, with the same webhook-id (Admin only)',
      tag: TAG,
      access: manage,
      params: idParam,
      response: deliverySchema,
      handler: async ({ params, auth }) => webhookDeliveries.redeliver(auth.organisationId, params.id),
    }),
    documented(
      defineRoute({
        method: 'post',
        path: '/webhooks/trigger',
        summary:
          "Send a test event, or an object's current state as the event naming that state (409 when the object is in another), marked triggered, to the subscribed endpoints; the same type for the same object within 24 hours answers the first event (200) and sends nothing",
        tag: TAG,
        access: requires('WebhookService:trigger'),
        body: triggerBody,
        response: triggerSchema,
        successStatus: 201,
        handler: async ({ body, auth, setSuccessStatus }) => {
          const triggered = await webhooks.trigger(auth.organisationId, body);
          if (triggered.repeated) setSuccessStatus(200);
          return triggered;
        },
      }),
      {
        alsoSucceedsWith: { status: 200, description: 'The same type was triggered for the same object in the last 24 hours: that event, sent once' },
        errors: { 409: 'The object is not in the state the event names; the message says which it is in' },
      },
    ),
  ];
}
