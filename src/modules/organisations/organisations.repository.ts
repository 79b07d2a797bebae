import type { Knex } from 'knex';
import { newId } from '../../db/ids';

export interface OrganisationRow {
  id: string;
  name: string;
  created_at: Date;
  updated_at: Date;
}

export function createOrganisationRepository(db: Knex) {
  return {
    /** Idempotent: a second bootstrap with the same name finds the first organisation. */
    async findOrCreate(trx: Knex.Transaction, name: string): Promise<OrganisationRow> {
      await trx('organisations').insert({ id: newId('org'), name }).onConflict('name').ignore();
      return trx<OrganisationRow>('organisations').where({ name }).first().then((row) => row!);
    },

    async findById(id: string): Promise<OrganisationRow | undefined> {
      return db<OrganisationRow>('organisations').where({ id }).first();
    },
  };
}
