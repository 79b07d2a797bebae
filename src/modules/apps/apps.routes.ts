import { z } from 'zod';
import { AppError } from '../../domain/errors';
import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, timestamps } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { hashSecret } from '../auth/secrets';
import { createAppRepository, toApp, toCredential } from './apps.repository';
import { newClientKey, newClientSecret } from './credentials';

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
  const apps = createAppRepository(deps.db);

  async function findApp(organisationId: string, id: string) {
    const app = await apps.findById(organisationId, id);
    if (!app) throw AppError.notFound('App');
    return app;
  }

  return [
    defineRoute({
      method: 'post',
      path: '/users/system',
      summary: 'Create a SystemUser integration: a new app with a clientKey and a clientSecret (shown once)',
      tag: 'Users',
      access: requires('UserService:createSystemUser'),
      body: z.object({ name: z.string().trim().min(1).max(200).default('System user') }).optional(),
      response: issuedCredentialSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => {
        const clientKey = newClientKey();
        const clientSecret = newClientSecret();
        const { app } = await apps.createWithCredential({
          organisationId: auth.organisationId,
          name: body?.name ?? 'System user',
          createdBy: auth.subjectId,
          clientKey,
          secretHash: await hashSecret(clientSecret),
        });
        return { appId: app.id, clientKey, clientSecret };
      },
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
      handler: async ({ params, auth }) => toApp(await findApp(auth.organisationId, params.id)),
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
        if (!(await apps.delete(auth.organisationId, params.id))) throw AppError.notFound('App');
        return { id: params.id, deleted: true };
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
      handler: async ({ params, auth }) => {
        await findApp(auth.organisationId, params.id);
        return (await apps.listCredentials(auth.organisationId, params.id)).map(toCredential);
      },
    }),
    defineRoute({
      method: 'put',
      path: '/apps/{id}/credentials',
      summary: "Rotate an app's client secret: the old secret and its sessions stop working at once",
      tag: 'Apps',
      access: requires('AppService:updateCredentials'),
      params: idParam,
      response: issuedCredentialSchema,
      handler: async ({ params, auth }) => {
        await findApp(auth.organisationId, params.id);
        const clientSecret = newClientSecret();
        const credential = await apps.rotateSecret(auth.organisationId, params.id, await hashSecret(clientSecret));
        if (!credential) throw AppError.notFound('Credential');
        return { appId: params.id, clientKey: credential.client_key, clientSecret };
      },
    }),
  ];
}
