import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import type { MachineDefinition } from '../../domain/fsm-machine';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export interface MachineRow {
  id: string;
  organisation_id: string;
  object_type: MachineDefinition['objectType'];
  name: string;
  states: MachineDefinition['states'];
  transitions: MachineDefinition['transitions'];
  created_at: Date;
  updated_at: Date;
}

export type NewMachine = MachineDefinition & { name: string };

export interface Machine extends NewMachine {
  id: string;
  createdAt: string;
  updatedAt: string;
}

export function toMachine(row: MachineRow): Machine {
  return {
    id: row.id,
    objectType: row.object_type,
    name: row.name,
    states: row.states,
    transitions: row.transitions,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Custom lifecycle machines. `db` may be a transaction. */
export function createMachineRepository(db: Knex) {
  const scoped = (organisationId: string) => db<MachineRow>('fsm_machines').where({ organisation_id: organisationId });

  return {
    async create(organisationId: string, machine: NewMachine): Promise<MachineRow> {
      const [row] = await db('fsm_machines')
        .insert({
          id: newId('fsm'),
          organisation_id: organisationId,
          object_type: machine.objectType,
          name: machine.name,
          states: JSON.stringify(machine.states),
          transitions: JSON.stringify(machine.transitions),
        })
        .returning<MachineRow[]>('*');
      return row!;
    },

    async findById(organisationId: string, id: string): Promise<MachineRow | undefined> {
      return scoped(organisationId).where({ id }).first();
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<Machine>> {
      return paginate(scoped(organisationId).select('*'), paging, { searchColumns: ['name'], map: toMachine });
    },
  };
}
