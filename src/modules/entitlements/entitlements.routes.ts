import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deleted, deletedSchema, idParam } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import {
  createEntitlementBody,
  createFeatureBody,
  createGrantBody,
  entitlementListQuery,
  entitlementParams,
  entitlementSchema,
  entitlementValueSchema,
  featureListQuery,
  featureSchema,
  grantListQuery,
  grantSchema,
  updateFeatureBody,
} from './entitlements.schemas';

const FEATURES = 'Features';
const ENTITLEMENTS = 'Entitlements';
const manageFeatures = requires('FeatureService:manageFeatures');
const readFeatures = requires('FeatureService:getFeatures');
const manageEntitlements = requires('EntitlementService:manageEntitlements');
const readEntitlements = requires('EntitlementService:getEntitlements');

export function entitlementRoutes(deps: AppDeps): Route[] {
  const { entitlements } = deps.services;
  return [
    defineRoute({
      method: 'post',
      path: '/features',
      summary: "Create a feature: something customers are entitled to, by key; a metered one counts a meter's usage",
      tag: FEATURES,
      access: manageFeatures,
      body: createFeatureBody,
      response: featureSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => entitlements.createFeature(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/features',
      summary: 'List features, newest first',
      tag: FEATURES,
      access: readFeatures,
      query: featureListQuery,
      response: pageOf(featureSchema),
      handler: async ({ query, auth }) => entitlements.listFeatures(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/features/{id}',
      summary: 'Read a feature',
      tag: FEATURES,
      access: readFeatures,
      params: idParam,
      response: featureSchema,
      handler: async ({ params, auth }) => entitlements.getFeature(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/features/{id}',
      summary: "Rename a feature, or change what it counts while no entitlement gives it",
      tag: FEATURES,
      access: manageFeatures,
      params: idParam,
      body: updateFeatureBody,
      response: featureSchema,
      handler: async ({ params, body, auth }) => entitlements.updateFeature(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/features/{id}',
      summary: 'Delete a feature that no entitlement gives',
      tag: FEATURES,
      access: manageFeatures,
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await entitlements.deleteFeature(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/customers/{id}/entitlements',
      summary: 'Entitle a customer to a feature: on (boolean), with a configuration (static), or an amount per usage period (metered); one per feature',
      tag: ENTITLEMENTS,
      access: manageEntitlements,
      params: idParam,
      body: createEntitlementBody,
      response: entitlementSchema,
      successStatus: 201,
      handler: async ({ params, body, auth }) => entitlements.createEntitlement(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'get',
      path: '/customers/{id}/entitlements',
      summary: "List the customer's entitlements with their values now, by feature key",
      tag: ENTITLEMENTS,
      access: readEntitlements,
      params: idParam,
      query: entitlementListQuery,
      response: pageOf(entitlementSchema),
      handler: async ({ params, query, auth }) => entitlements.list(auth.organisationId, params.id, query),
    }),
    defineRoute({
      method: 'get',
      path: '/customers/{id}/entitlements/{featureKey}/value',
      summary: 'May the customer use the feature now, and how much is left: counts every event of a batch once POST /events/batch answered 200',
      tag: ENTITLEMENTS,
      access: readEntitlements,
      params: entitlementParams,
      response: entitlementValueSchema,
      handler: async ({ params, auth }) => entitlements.value(auth.organisationId, params.id, params.featureKey),
    }),
    defineRoute({
      method: 'delete',
      path: '/customers/{id}/entitlements/{featureKey}',
      summary: 'Remove an entitlement, with its grants',
      tag: ENTITLEMENTS,
      access: manageEntitlements,
      params: entitlementParams,
      response: deletedSchema,
      handler: async ({ params, auth }) => deleted(await entitlements.deleteEntitlement(auth.organisationId, params.id, params.featureKey)),
    }),
    defineRoute({
      method: 'post',
      path: '/customers/{id}/entitlements/{featureKey}/grants',
      summary: "Grant an amount beyond a metered entitlement's limit: used once the period's limit is, never refilled",
      tag: ENTITLEMENTS,
      access: manageEntitlements,
      params: entitlementParams,
      body: createGrantBody,
      response: grantSchema,
      successStatus: 201,
      handler: async ({ params, body, auth }) => entitlements.createGrant(auth.organisationId, params.id, params.featureKey, body),
    }),
    defineRoute({
      method: 'get',
      path: '/customers/{id}/entitlements/{featureKey}/grants',
      summary: "List a metered entitlement's grants with what each has left, newest first",
      tag: ENTITLEMENTS,
      access: readEntitlements,
      params: entitlementParams,
      query: grantListQuery,
      response: pageOf(grantSchema),
      handler: async ({ params, query, auth }) => entitlements.listGrants(auth.organisationId, params.id, params.featureKey, query),
    }),
  ];
}
