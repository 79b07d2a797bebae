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
    /** The organisation of that name, and whether this call created it. */
    async findOrCreate(trx: Knex.Transaction, name: string): Promise<{ organisation: OrganisationRow; created: boolean }> {
      const [inserted] = await trx('organisations').insert({ id: newId('org'), name }).onConflict('name').ignore().returning<OrganisationRow[]>('*');
      if (inserted) return { organisation: inserted, created: true };
      return { organisation: (await trx<OrganisationRow>('organisations').where({ name }).first())!, created: false };
    },

    async findById(id: string): Promise<OrganisationRow | undefined> {
      return db<OrganisationRow>('organisations').where({ id }).first();
    },
  };
}
