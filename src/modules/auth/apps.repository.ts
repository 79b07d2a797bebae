import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import { createRefreshTokenRepository } from './refresh-tokens.repository';

export interface AppRow {
  id: string;
  organisation_id: string;
  name: string;
  role: 'SystemUser';
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface CredentialRow {
  id: string;
  organisation_id: string;
  app_id: string;
  client_key: string;
  secret_hash: string;
  secret_rotated_at: Date;
  last_used_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface App {
  id: string;
  name: string;
  role: 'SystemUser';
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Credential {
  id: string;
  appId: string;
  clientKey: string;
  secretRotatedAt: string;
  lastUsedAt: string | null;
  createdAt: string;
}

export function toApp(row: AppRow): App {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toCredential(row: CredentialRow): Credential {
  return {
    id: row.id,
    appId: row.app_id,
    clientKey: row.client_key,
    secretRotatedAt: row.secret_rotated_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
  };
}

/** Apps and their credentials; the sessions they open belong to the auth module. */
export function createAppRepository(db: Knex) {
  const refreshTokens = createRefreshTokenRepository(db);

  return {
    async createWithCredential(app: {
      organisationId: string;
      name: string;
      createdBy: string;
      clientKey: string;
      secretHash: string;
    }): Promise<{ app: AppRow; credential: CredentialRow }> {
      return db.transaction(async (trx) => {
        const [appRow] = await trx<AppRow>('apps')
          .insert({ id: newId('app'), organisation_id: app.organisationId, name: app.name, role: 'SystemUser', created_by: app.createdBy })
          .returning('*');
        const [credential] = await trx<CredentialRow>('app_credentials')
          .insert({
            id: newId('crd'),
            organisation_id: app.organisationId,
            app_id: appRow!.id,
            client_key: app.clientKey,
            secret_hash: app.secretHash,
          })
          .returning('*');
        return { app: appRow!, credential: credential! };
      });
    },

    async findCredentialByKey(clientKey: string): Promise<(CredentialRow & { role: AppRow['role'] }) | undefined> {
      return db('app_credentials as c')
        .join('apps as a', 'a.id', 'c.app_id')
        .where('c.client_key', clientKey)
        .first('c.*', 'a.role');
    },

    async touchCredential(id: string): Promise<void> {
      await db('app_credentials').where({ id }).update({ last_used_at: db.fn.now() });
    },

    async exists(organisationId: string, id: string): Promise<boolean> {
      return Boolean(await db('apps').where({ organisation_id: organisationId, id }).first('id'));
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<App>> {
      return paginate<AppRow, App>(db('apps').where({ organisation_id: organisationId }).select('*'), paging, {
        searchColumns: ['name'],
        map: toApp,
      });
    },

    async findById(organisationId: string, id: string): Promise<AppRow | undefined> {
      return db<AppRow>('apps').where({ organisation_id: organisationId, id }).first();
    },

    /** Deleting an app takes its credentials with it (cascade) and ends its refresh tokens. */
    async delete(organisationId: string, id: string): Promise<boolean> {
      return db.transaction(async (trx) => {
        const deleted = await trx('apps').where({ organisation_id: organisationId, id }).delete();
        await refreshTokens.revokeSubject(trx, organisationId, id);
        return deleted > 0;
      });
    },

    async listCredentials(organisationId: string, appId: string): Promise<CredentialRow[]> {
      return db<CredentialRow>('app_credentials').where({ organisation_id: organisationId, app_id: appId }).orderBy('created_at');
    },

    /** A rotated secret invalidates the old one at once, along with every session it opened. */
    async rotateSecret(organisationId: string, appId: string, secretHash: string): Promise<CredentialRow | undefined> {
      return db.transaction(async (trx) => {
        const [row] = await trx<CredentialRow>('app_credentials')
          .where({ organisation_id: organisationId, app_id: appId })
          .update({ secret_hash: secretHash, secret_rotated_at: trx.fn.now(), updated_at: trx.fn.now() })
          .returning('*');
        // Its access tokens end too: they carry the version this bumps.
        if (row) await trx('apps').where({ organisation_id: organisationId, id: appId }).increment('token_version', 1);
        await refreshTokens.revokeSubject(trx, organisationId, appId);
        return row;
      });
    },
  };
}

export type AppRepository = ReturnType<typeof createAppRepository>;
