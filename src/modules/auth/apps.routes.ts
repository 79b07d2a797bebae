import { z } from 'zod';
import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, timestamps, deleted, text } from '../../http/schemas';
import type { AppDeps } from '../../deps';

const appSchema = z.object({
  id: z.string(),
  name: z.string(),
  role: z.literal('SystemUser'),
  createdBy: z.string().nullable(),
  ...timestamps,
});

const credentialSchema = z.object({
  id: z.string(),
  appId: z.string(),
  clientKey: z.string(),
  secretRotatedAt: z.string(),
  lastUsedAt: z.string().nullable(),
  createdAt: z.string(),
});

const issuedCredentialSchema = z.object({
  appId: z.string(),
  clientKey: z.string(),
  clientSecret: z.string().describe('Shown once; only a hash is stored'),
});

export function appRoutes(deps: AppDeps): Route[] {
  const { apps } = deps.services;

  return [
    defineRoute({
      method: 'post',
      path: '/users/system',
      summary: 'Create a SystemUser integration: a new app with a clientKey and a clientSecret (shown once)',
      tag: 'Users',
      access: requires('UserService:createSystemUser'),
      body: z.object({ name: text(200).default('System user') }).optional(),
      response: issuedCredentialSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => apps.createSystemUser(auth.organisationId, body?.name ?? 'System user', auth.subjectId),
    }),
    defineRoute({
      method: 'get',
      path: '/apps',
      summary: 'List app integrations',
      tag: 'Apps',
      access: requires('AppService:getApps'),
      query: pageQuery,
      response: pageOf(appSchema),
      handler: async ({ query, auth }) => apps.list(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/apps/{id}',
      summary: 'Read an app integration',
      tag: 'Apps',
      access: requires('AppService:getApps'),
      params: idParam,
      response: appSchema,
      handler: async ({ params, auth }) => apps.get(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'delete',
      path: '/apps/{id}',
      summary: 'Remove an app integration, its credentials and its sessions (Admin only)',
      tag: 'Apps',
      access: requires('AppService:deleteApp'),
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await apps.delete(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/apps/{id}/credentials',
      summary: "Read an app's credentials (never the secret)",
      tag: 'Apps',
      access: requires('AppService:getCredentials'),
      params: idParam,
      response: z.array(credentialSchema),
      handler: async ({ params, auth }) => apps.credentials(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/apps/{id}/credentials',
      summary: "Rotate an app's client secret: the old secret and its sessions stop working at once (a SystemUser only its own app's)",
      tag: 'Apps',
      access: requires('AppService:updateCredentials'),
      params: idParam,
      response: issuedCredentialSchema,
      handler: async ({ params, auth }) => apps.rotateSecret(auth, params.id),
    }),
  ];
}
