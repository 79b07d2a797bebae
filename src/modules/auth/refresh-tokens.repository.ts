import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import type { Role } from '../../http/permissions';

export interface RefreshTokenRow {
  id: string;
  organisation_id: string;
  subject_id: string;
  role: Role;
  family_id: string;
  token_hash: string;
  expires_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
}

export function createRefreshTokenRepository(db: Knex) {
  return {
    async insert(
      trx: Knex | Knex.Transaction,
      token: { organisationId: string; subjectId: string; role: Role; familyId: string; tokenHash: string; expiresAt: Date },
    ): Promise<void> {
      await trx('refresh_tokens').insert({
        id: newId('rtk'),
        organisation_id: token.organisationId,
        subject_id: token.subjectId,
        role: token.role,
        family_id: token.familyId,
        token_hash: token.tokenHash,
        expires_at: token.expiresAt,
      });
    },

    async lockByHash(trx: Knex.Transaction, tokenHash: string): Promise<RefreshTokenRow | undefined> {
      return trx<RefreshTokenRow>('refresh_tokens').where({ token_hash: tokenHash }).forUpdate().first();
    },

    async markUsed(trx: Knex.Transaction, id: string): Promise<void> {
      await trx('refresh_tokens').where({ id }).update({ used_at: trx.fn.now() });
    },

    async revokeFamily(trx: Knex | Knex.Transaction, familyId: string): Promise<void> {
      await trx('refresh_tokens').where({ family_id: familyId }).whereNull('revoked_at').update({ revoked_at: trx.fn.now() });
    },

    async revokeSubject(trx: Knex | Knex.Transaction, organisationId: string, subjectId: string): Promise<void> {
      await trx('refresh_tokens')
        .where({ organisation_id: organisationId, subject_id: subjectId })
        .whereNull('revoked_at')
        .update({ revoked_at: trx.fn.now() });
    },

    transaction<T>(work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
      return db.transaction(work);
    },
  };
}

export type RefreshTokenRepository = ReturnType<typeof createRefreshTokenRepository>;
