import type { Knex } from 'knex';
import { newId } from '../../db/ids';

export interface UserRow {
  id: string;
  organisation_id: string;
  email: string;
  password_hash: string;
  role: 'Admin';
  created_at: Date;
  updated_at: Date;
}

export function createUserRepository(db: Knex) {
  return {
    async findByEmail(email: string, trx: Knex | Knex.Transaction = db): Promise<UserRow | undefined> {
      return trx<UserRow>('users').whereRaw('lower(email) = lower(?)', [email]).first();
    },

    async exists(organisationId: string, id: string): Promise<boolean> {
      return Boolean(await db('users').where({ organisation_id: organisationId, id }).first('id'));
    },

    async createAdmin(trx: Knex.Transaction, user: { organisationId: string; email: string; passwordHash: string }): Promise<UserRow> {
      const [row] = await trx<UserRow>('users')
        .insert({ id: newId('usr'), organisation_id: user.organisationId, email: user.email, password_hash: user.passwordHash, role: 'Admin' })
        .returning('*');
      return row!;
    },
  };
}
