import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { SessionVersions } from '../../http/sessions';
import { AppError } from '../../domain/errors';
import type { Role } from '../../http/permissions';
import type { AccessTokenIssuer } from './access-tokens';
import { createRefreshTokenRepository } from './refresh-tokens.repository';
import { burnVerification, newOpaqueToken, sha256, verifySecret } from './secrets';
import { createUserRepository } from './users.repository';
import { createAppRepository } from './apps.repository';

export interface Session {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
}

const invalidCredentials = () => new AppError('unauthorized', 'Invalid credentials');
const invalidRefreshToken = () => new AppError('unauthorized', 'Invalid refresh token');

/** The current token version of an app or user; null once it is gone. */
async function tokenVersionOf(db: Knex | Knex.Transaction, subject: { subjectId: string; organisationId: string; role: Role }): Promise<number | null> {
  const row = await db(subject.role === 'Admin' ? 'users' : 'apps').where({ organisation_id: subject.organisationId, id: subject.subjectId }).first<{ token_version: number } | undefined>('token_version');
  return row ? row.token_version : null;
}

/**
 * Session versions as the router checks them on every request, each read kept for at most a second: a
 * rotation or a deletion ends the sessions it concerns within that second, on every API process.
 */
export function createSessionVersions(db: Knex, ttlMs = 1_000): SessionVersions {
  const cache = new Map<string, { version: number | null; until: number }>();
  return async (auth) => {
    const key = `${auth.role}\u0000${auth.subjectId}`;
    const now = Date.now();
    const cached = cache.get(key);
    if (cached && cached.until > now) return cached.version;
    const version = await tokenVersionOf(db, auth);
    if (cache.size >= 10_000) cache.clear();
    cache.set(key, { version, until: now + ttlMs });
    return version;
  };
}

export function createAuthService(deps: { db: Knex; accessTokens: AccessTokenIssuer; refreshTokenTtlDays: number }) {
  const refreshTokens = createRefreshTokenRepository(deps.db);
  const users = createUserRepository(deps.db);
  const apps = createAppRepository(deps.db);

  async function openSession(
    trx: Knex | Knex.Transaction,
    subject: { subjectId: string; organisationId: string; role: Role },
    familyId: string,
  ): Promise<Session> {
    const refreshToken = newOpaqueToken();
    await refreshTokens.insert(trx, {
      ...subject,
      familyId,
      tokenHash: sha256(refreshToken),
      expiresAt: new Date(Date.now() + deps.refreshTokenTtlDays * 86_400_000),
    });
    const version = (await tokenVersionOf(trx, subject)) ?? 0;
    const { token, expiresIn } = await deps.accessTokens.issue({ ...subject, version });
    return { accessToken: token, refreshToken, expiresIn };
  }

  async function subjectStillExists(organisationId: string, subjectId: string, role: Role): Promise<boolean> {
    return role === 'Admin' ? users.exists(organisationId, subjectId) : apps.exists(organisationId, subjectId);
  }

  return {
    async login(email: string, password: string): Promise<Session> {
      const user = await users.findByEmail(email);
      if (!user) {
        await burnVerification(password);
        throw invalidCredentials();
      }
      if (!(await verifySecret(password, user.password_hash))) throw invalidCredentials();
      return openSession(deps.db, { subjectId: user.id, organisationId: user.organisation_id, role: user.role }, randomUUID());
    },

    async systemLogin(clientKey: string, clientSecret: string): Promise<Session> {
      const credential = await apps.findCredentialByKey(clientKey);
      if (!credential) {
        await burnVerification(clientSecret);
        throw invalidCredentials();
      }
      if (!(await verifySecret(clientSecret, credential.secret_hash))) throw invalidCredentials();
      await apps.touchCredential(credential.id);
      return openSession(
        deps.db,
        { subjectId: credential.app_id, organisationId: credential.organisation_id, role: credential.role },
        randomUUID(),
      );
    },

    /**
     * Rotation: the presented token dies and a new one joins its family. A token presented twice means
     * it leaked, so the whole family is revoked (committed even though the caller gets a 401).
     */
    async refresh(presented: string): Promise<Session> {
      const outcome = await refreshTokens.transaction(async (trx) => {
        const row = await refreshTokens.lockByHash(trx, sha256(presented));
        if (!row || row.revoked_at) return { ok: false as const };
        if (row.used_at) {
          await refreshTokens.revokeFamily(trx, row.family_id);
          return { ok: false as const };
        }
        if (row.expires_at.getTime() <= Date.now()) return { ok: false as const };
        if (!(await subjectStillExists(row.organisation_id, row.subject_id, row.role))) return { ok: false as const };
        await refreshTokens.markUsed(trx, row.id);
        const session = await openSession(
          trx,
          { subjectId: row.subject_id, organisationId: row.organisation_id, role: row.role },
          row.family_id,
        );
        return { ok: true as const, session };
      });
      if (!outcome.ok) throw invalidRefreshToken();
      return outcome.session;
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
