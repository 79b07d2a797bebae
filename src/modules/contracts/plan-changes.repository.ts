import type { Knex } from 'knex';
import type { z } from 'zod';
import { calendarDay } from '../../db/dates';
import { formatAmount } from '../../domain/money';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { planChangeSchema } from './contracts.schemas';
import type { PlanChangeCredit } from '../../../workflows/contract.types';

export type { PlanChangeCredit };

export type PlanChangeStatus = 'pending' | 'settled' | 'undone';
export type PlanChange = z.output<typeof planChangeSchema>;


export interface PlanChangeRow {
  id: string;
  organisation_id: string;
  contract_id: string;
  from_contract_plan_id: string | null;
  to_contract_plan_id: string | null;
  to_plan_id: string;
  effective_date: Date;
  previous_end_date: Date | null;
  prorate: boolean;
  status: PlanChangeStatus;
  credits: PlanChangeCredit[];
  settled_invoice_id: string | null;
  credited_to_balance: string | null;
  settled_at: Date | null;
  undone_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewPlanChange {
  id: string;
  organisationId: string;
  contractId: string;
  fromContractPlanId: string;
  toContractPlanId: string;
  toPlanId: string;
  effectiveDate: string;
  previousEndDate: string | null;
  prorate: boolean;
  credits: PlanChangeCredit[];
}

export function toPlanChange(row: PlanChangeRow, currency: string): PlanChange {
  return {
    id: row.id,
    contractId: row.contract_id,
    fromContractPlanId: row.from_contract_plan_id,
    toContractPlanId: row.to_contract_plan_id,
    toPlanId: row.to_plan_id,
    effectiveDate: calendarDay(row.effective_date),
    prorate: row.prorate,
    status: row.status,
    credits: row.credits.map((credit) => ({ ...credit, amount: formatAmount(credit.amount, currency) })),
    settledInvoiceId: row.settled_invoice_id,
    creditedToBalance: row.credited_to_balance === null ? null : formatAmount(row.credited_to_balance, currency),
    settledAt: row.settled_at?.toISOString() ?? null,
    undoneAt: row.undone_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The plan changes of contracts. `db` may be a transaction. */
export function createPlanChangeRepository(db: Knex) {
  const ofContract = (organisationId: string, contractId: string) => db<PlanChangeRow>('plan_changes').where({ organisation_id: organisationId, contract_id: contractId });

  return {
    /** Records the change; one already recorded under the same id (a retried step) is left as it is. */
    async insert(change: NewPlanChange): Promise<void> {
      await db('plan_changes')
        .insert({
          id: change.id,
          organisation_id: change.organisationId,
          contract_id: change.contractId,
          from_contract_plan_id: change.fromContractPlanId,
          to_contract_plan_id: change.toContractPlanId,
          to_plan_id: change.toPlanId,
          effective_date: change.effectiveDate,
          previous_end_date: change.previousEndDate,
          prorate: change.prorate,
          credits: JSON.stringify(change.credits),
        })
        .onConflict('id')
        .ignore();
    },

    async find(organisationId: string, contractId: string, id: string): Promise<PlanChangeRow | undefined> {
      return ofContract(organisationId, contractId).where({ id }).first();
    },

    /** Inside a transaction: the change, its row locked until commit. */
    async lock(organisationId: string, contractId: string, id: string): Promise<PlanChangeRow | undefined> {
      return ofContract(organisationId, contractId).where({ id }).forUpdate().first();
    },

    /** The contract's changes, newest first. */
    async list(organisationId: string, contractId: string, paging: PageQuery): Promise<Page<PlanChangeRow>> {
      return paginate<PlanChangeRow, PlanChangeRow>(ofContract(organisationId, contractId).select('*'), paging, { searchColumns: ['id'], map: (row) => row });
    },

    /** The changes of the contracts that no invoice has credited yet, oldest first. */
    async pendingOf(contractIds: string[]): Promise<PlanChangeRow[]> {
      if (contractIds.length === 0) return [];
      return db<PlanChangeRow>('plan_changes').whereIn('contract_id', contractIds).where({ status: 'pending' }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
    },

    /** The changes, not undone, that ended the contract plan. */
    async standingFrom(contractPlanId: string): Promise<PlanChangeRow[]> {
      return db<PlanChangeRow>('plan_changes').where({ from_contract_plan_id: contractPlanId }).whereNot({ status: 'undone' });
    },

    /** The contract's latest change that is not undone. */
    async latestStanding(contractId: string): Promise<PlanChangeRow | undefined> {
      return db<PlanChangeRow>('plan_changes').where({ contract_id: contractId }).whereNot({ status: 'undone' }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).first();
    },

    /** The credits of changes (not undone) that credit lines of the invoice: a credit note must leave them room. */
    async creditsOnInvoice(contractId: string, invoiceId: string): Promise<Map<string, string>> {
      const { rows } = await db.raw<{ rows: Array<{ invoice_item_id: string; amount: string }> }>(
        `SELECT credit.value->>'invoiceItemId' AS invoice_item_id, sum((credit.value->>'amount')::numeric)::text AS amount
           FROM plan_changes c CROSS JOIN jsonb_array_elements(c.credits) AS credit(value)
          WHERE c.contract_id = ? AND c.status <> 'undone' AND credit.value->>'invoiceId' = ?
          GROUP BY 1`,
        [contractId, invoiceId],
      );
      return new Map(rows.map((row) => [row.invoice_item_id, row.amount]));
    },

    /**
     * A change (not undone) made after `since` that credits one of the invoice's items: what it credits
     * was worked out net of what had been credited on them by then.
     */
    async creditingItemsSince(contractId: string, invoiceId: string, invoiceItemIds: readonly string[], since: Date): Promise<string | undefined> {
      if (invoiceItemIds.length === 0) return undefined;
      const { rows } = await db.raw<{ rows: Array<{ id: string }> }>(
        `SELECT c.id FROM plan_changes c
          WHERE c.contract_id = ? AND c.status <> 'undone' AND c.created_at > ?
            AND EXISTS (SELECT 1 FROM jsonb_array_elements(c.credits) AS credit(value)
                         WHERE credit.value->>'invoiceId' = ? AND credit.value->>'invoiceItemId' = ANY(?::text[]))
          ORDER BY c.created_at, c.id LIMIT 1`,
        [contractId, since, invoiceId, [...invoiceItemIds]],
      );
      return rows[0]?.id;
    },

    /** The changes an invoice run credited: each with the invoice that holds its lines and what went to the balance. */
    async settle(settled: Array<{ id: string; invoiceId: string | null; toBalance: string | null }>): Promise<void> {
      for (const change of settled) {
        await db('plan_changes')
          .where({ id: change.id, status: 'pending' })
          .update({ status: 'settled', settled_invoice_id: change.invoiceId, credited_to_balance: change.toBalance, settled_at: db.fn.now(), updated_at: db.fn.now() });
      }
    },

    async markUndone(id: string): Promise<void> {
      await db('plan_changes').where({ id }).update({ status: 'undone', to_contract_plan_id: null, undone_at: db.fn.now(), updated_at: db.fn.now() });
    },
  };
}

export type PlanChangeRepository = ReturnType<typeof createPlanChangeRepository>;
