import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import type { CreditedSoFar, CreditNotePlan } from '../../domain/credit-notes';
import { sumAmounts } from '../../domain/money';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export type CreditNoteStatus = 'draft' | 'issued' | 'voided';
export type CreditNoteSettlement = 'reduces_due' | 'refund' | 'balance';

export interface CreditNoteRow {
  id: string;
  organisation_id: string;
  invoice_id: string;
  customer_id: string;
  status: CreditNoteStatus;
  number: string | null;
  number_sequence: number | null;
  reason: string;
  /** The note's date: the day it was issued (drafted, until then) in the customer's zone, else the organisation's. */
  date: Date | string;
  currency: string;
  subtotal: string;
  tax_total: string;
  total: string;
  refund: boolean;
  settlement: CreditNoteSettlement | null;
  refund_payment_id: string | null;
  last_step_id: string | null;
  /** The Idempotency-Key of the request that created the note, if it carried one. */
  request_key: string | null;
  issued_at: Date | null;
  voided_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface CreditNoteItemRow {
  id: string;
  credit_note_id: string;
  invoice_item_id: string;
  title: string;
  quantity: string | null;
  amount: string;
  position: number;
}

export type CreditNoteWithItems = CreditNoteRow & { items: CreditNoteItemRow[] };

export interface CreditNoteFilter {
  customerId?: string;
  invoiceId?: string;
  status?: CreditNoteStatus;
}

/** What a step changes on a credit note; `last_step_id` makes the step run once. */
export type CreditNoteChange = Partial<Pick<CreditNoteRow, 'status' | 'number' | 'number_sequence' | 'settlement' | 'refund_payment_id' | 'issued_at' | 'voided_at' | 'date'>> & {
  last_step_id: string;
};

/** Credit notes and their lines. `db` may be a transaction. */
export function createCreditNoteRepository(db: Knex) {
  const notes = (organisationId: string) => db<CreditNoteRow>('credit_notes').where({ organisation_id: organisationId });

  async function withItems(rows: CreditNoteRow[]): Promise<CreditNoteWithItems[]> {
    if (rows.length === 0) return [];
    const items = await db<CreditNoteItemRow>('credit_note_items')
      .whereIn(
        'credit_note_id',
        rows.map((row) => row.id),
      )
      .orderBy(['credit_note_id', 'position']);
    return rows.map((row) => ({ ...row, items: items.filter((item) => item.credit_note_id === row.id) }));
  }

  return {
    async insertDraft(
      note: { organisationId: string; invoiceId: string; customerId: string; date: string; currency: string; reason: string; refund: boolean; requestKey?: string },
      plan: CreditNotePlan,
    ): Promise<CreditNoteRow> {
      const [row] = await db<CreditNoteRow>('credit_notes')
        .insert({
          id: newId('crn'),
          organisation_id: note.organisationId,
          invoice_id: note.invoiceId,
          customer_id: note.customerId,
          status: 'draft',
          reason: note.reason,
          date: note.date,
          currency: note.currency,
          subtotal: plan.subtotal,
          tax_total: plan.taxTotal,
          total: plan.total,
          refund: note.refund,
          request_key: note.requestKey ?? null,
        })
        .returning('*');
      await db('credit_note_items').insert(
        plan.lines.map((line, position) => ({ id: newId('cni'), credit_note_id: row!.id, invoice_item_id: line.invoiceItemId, title: line.title, quantity: line.quantity, amount: line.amount, position })),
      );
      return row!;
    },

    /** The note a request with this Idempotency-Key created, if any. */
    async findByRequestKey(organisationId: string, requestKey: string): Promise<CreditNoteRow | undefined> {
      return notes(organisationId).where({ request_key: requestKey }).first();
    },

    async find(organisationId: string, id: string): Promise<CreditNoteWithItems | undefined> {
      const row = await notes(organisationId).where({ id }).first();
      return row ? (await withItems([row]))[0] : undefined;
    },

    /** The invoice's issued notes, in the order they were issued: what its document lists. */
    async issuedOfInvoice(organisationId: string, invoiceId: string): Promise<CreditNoteRow[]> {
      return notes(organisationId).where({ invoice_id: invoiceId, status: 'issued' }).orderBy([{ column: 'issued_at' }, { column: 'id' }]);
    },

    /** Inside a transaction: the credit note under its row lock until commit. */
    async lock(organisationId: string, id: string): Promise<CreditNoteRow | undefined> {
      return notes(organisationId).where({ id }).forUpdate().first();
    },

    async list(organisationId: string, filter: CreditNoteFilter, paging: PageQuery): Promise<Page<CreditNoteWithItems>> {
      const query = notes(organisationId).select('*');
      if (filter.customerId) query.where({ customer_id: filter.customerId });
      if (filter.invoiceId) query.where({ invoice_id: filter.invoiceId });
      if (filter.status) query.where({ status: filter.status });
      const page = await paginate<CreditNoteRow, CreditNoteRow>(query, paging, { searchColumns: ['number', 'reason'], map: (row) => row });
      return { ...page, items: await withItems(page.items) };
    },

    /**
     * What the invoice's credit notes that are not voided credit: drafts hold their share too, so that
     * two notes written at once can never together credit more than the invoice. Read under the invoice's
     * row lock.
     */
    async creditedSoFar(invoiceId: string): Promise<CreditedSoFar> {
      const rows = await db<CreditNoteRow>('credit_notes').where({ invoice_id: invoiceId }).whereNot({ status: 'voided' }).select('id', 'subtotal', 'total');
      const lines = await db<CreditNoteItemRow>('credit_note_items')
        .whereIn(
          'credit_note_id',
          rows.map((row) => row.id),
        )
        .select('invoice_item_id', 'amount');
      const byItem = new Map<string, string>();
      for (const line of lines) byItem.set(line.invoice_item_id, sumAmounts([byItem.get(line.invoice_item_id) ?? '0', line.amount]).toFixed());
      return { subtotal: sumAmounts(rows.map((row) => row.subtotal)).toFixed(), total: sumAmounts(rows.map((row) => row.total)).toFixed(), byItem };
    },

    /** Net credited per invoice item of the invoices by their credit notes that count (not voided). */
    async creditedItemsOf(invoiceIds: readonly string[]): Promise<Array<{ invoice_id: string; invoice_item_id: string; amount: string }>> {
      if (invoiceIds.length === 0) return [];
      return db('credit_note_items as i')
        .join('credit_notes as n', 'n.id', 'i.credit_note_id')
        .whereRaw('n.invoice_id = ANY(?)', [[...invoiceIds]])
        .whereNot('n.status', 'voided')
        .groupBy('n.invoice_id', 'i.invoice_item_id')
        .select('n.invoice_id', 'i.invoice_item_id', db.raw('sum(i.amount)::text AS amount'));
    },

    /** Net credited per invoice item by issued credit notes: what revenue no longer recognises. */
    async issuedNetByItem(invoiceId: string): Promise<Map<string, string>> {
      const rows = await db('credit_note_items as i')
        .join('credit_notes as n', 'n.id', 'i.credit_note_id')
        .where({ 'n.invoice_id': invoiceId, 'n.status': 'issued' })
        .groupBy('i.invoice_item_id')
        .select<Array<{ invoice_item_id: string; amount: string }>>('i.invoice_item_id', db.raw('sum(i.amount)::text AS amount'));
      return new Map(rows.map((row) => [row.invoice_item_id, row.amount]));
    },

    /**
     * Whether any credit note of the invoice still counts (draft or issued), or, given settlements, any
     * issued one settled so: the invoice's cancellation and some undos wait for their void.
     */
    async anyStanding(invoiceId: string, settlements?: CreditNoteSettlement[]): Promise<boolean> {
      const query = db('credit_notes').where({ invoice_id: invoiceId });
      if (settlements) query.where({ status: 'issued' }).whereIn('settlement', settlements);
      else query.whereNot({ status: 'voided' });
      return (await query.first('id')) !== undefined;
    },

    async apply(id: string, change: CreditNoteChange): Promise<void> {
      await db('credit_notes')
        .where({ id })
        .update({ ...change, updated_at: db.fn.now() });
    },

    /** Forgets a draft nothing will issue (its workflow could not be reached); an issued one stays. */
    async deleteDraft(organisationId: string, id: string): Promise<boolean> {
      return (await notes(organisationId).where({ id, status: 'draft' }).whereNull('number').delete()) > 0;
    },
  };
}

export type CreditNoteRepository = ReturnType<typeof createCreditNoteRepository>;
