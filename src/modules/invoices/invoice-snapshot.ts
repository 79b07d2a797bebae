import type { Knex } from 'knex';
import type { InvoiceLifecycleInput } from '../../../workflows/invoice-lifecycle.types';
import { createInvoiceRepository, type InvoiceRow } from './invoices.repository';

export type LifecycleSnapshot = NonNullable<InvoiceLifecycleInput['carried']>;

/**
 * An invoice's lifecycle as Postgres records it: its status, the transitions not undone (the undo
 * stack) and the next transition number. Postgres is the source of truth a workflow rebuilds from.
 */
export async function lifecycleSnapshot(db: Knex, row: InvoiceRow): Promise<LifecycleSnapshot> {
  const recorded = await createInvoiceRepository(db).transitions(row.id);
  return {
    state: row.status,
    transitions: recorded.filter((t) => !t.undone_at).map((t) => ({ seq: t.seq, step: t.step, from: t.from_state, to: t.to_state })),
    nextSeq: recorded.length === 0 ? 1 : Math.max(...recorded.map((t) => t.seq)) + 1,
  };
}
