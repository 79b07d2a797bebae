import type { Knex } from 'knex';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import type { Role } from '../../http/permissions';
import { hashSecret } from './secrets';
import { createAppRepository, toApp, toCredential, type App, type AppRow, type Credential } from './apps.repository';
import { newClientKey, newClientSecret } from './credentials';

/** A client secret as issued: shown once, only its hash is stored. */
export interface IssuedCredential {
  appId: string;
  clientKey: string;
  clientSecret: string;
}

/** App integrations (SystemUsers) and their client credentials. */
export function createAppService(db: Knex) {
  const apps = createAppRepository(db);

  async function requireApp(organisationId: string, id: string): Promise<AppRow> {
    return orNotFound(await apps.findById(organisationId, id), 'App');
  }

  return {
    async createSystemUser(organisationId: string, name: string, createdBy: string): Promise<IssuedCredential> {
      const clientKey = newClientKey();
      const clientSecret = newClientSecret();
      const { app } = await apps.createWithCredential({ organisationId, name, createdBy, clientKey, secretHash: await hashSecret(clientSecret) });
      return { appId: app.id, clientKey, clientSecret };
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<App>> {
      return apps.list(organisationId, paging);
    },

    async get(organisationId: string, id: string): Promise<App> {
      return toApp(await requireApp(organisationId, id));
    },

    /** Its credentials and sessions go with it. */
    async delete(organisationId: string, id: string): Promise<void> {
      if (!(await apps.delete(organisationId, id))) throw AppError.notFound('App');
    },

    async credentials(organisationId: string, appId: string): Promise<Credential[]> {
      await requireApp(organisationId, appId);
      return (await apps.listCredentials(organisationId, appId)).map(toCredential);
    },

    /** The old secret and every session it opened stop working at once. */
    /** An Admin rotates any app's secret; an integration only its own, or it could take over another. */
    async rotateSecret(caller: { organisationId: string; subjectId: string; role: Role }, appId: string): Promise<IssuedCredential> {
      const { organisationId } = caller;
      await requireApp(organisationId, appId);
      if (caller.role !== 'Admin' && caller.subjectId !== appId) throw new AppError('forbidden', 'Forbidden');
      const clientSecret = newClientSecret();
      const credential = orNotFound(await apps.rotateSecret(organisationId, appId, await hashSecret(clientSecret)), 'Credential');
      return { appId, clientKey: credential.client_key, clientSecret };
    },
  };
}

export type AppService = ReturnType<typeof createAppService>;
