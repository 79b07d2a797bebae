import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { calendarDay } from '../../db/dates';
import { formatAmount } from '../../domain/money';
import { paginate, pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { OrganisationIdKey } from '../../../workflows/search-attributes';
import { revenueSyncWorkflow, revenueSyncWorkflowId } from '../../../workflows/revenue-sync.workflow';

interface RevenueRow {
  id: string;
  invoice_id: string;
  invoice_item_id: string;
  period: Date;
  days: number;
  amount: string;
  currency: string;
  status: string;
  created_at: Date;
  updated_at: Date;
}

const revenueSchema = z.object({
  id: z.string(),
  invoiceId: z.string(),
  invoiceItemId: z.string(),
  period: z.string().describe('first day of the month, YYYY-MM-DD'),
  days: z.number().int(),
  amount: z.string(),
  currency: z.string(),
  status: z.enum(['recognised', 'collected', 'reversed']),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const toRevenue = (row: RevenueRow) => ({
  id: row.id,
  invoiceId: row.invoice_id,
  invoiceItemId: row.invoice_item_id,
  period: calendarDay(row.period),
  days: row.days,
  amount: formatAmount(row.amount, row.currency),
  currency: row.currency,
  status: row.status as 'recognised' | 'collected' | 'reversed',
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

export function revenueRoutes(deps: AppDeps): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: '/revenue',
      summary: 'Revenue records, by period; search matches the invoice or item id, the status or the currency',
      tag: 'Revenue',
      access: requires('JobService:create', 'RevenueService:getRevenue'),
      query: pageQuery.extend({ invoiceId: z.string().optional() }),
      response: pageOf(revenueSchema),
      handler: async ({ query, auth }) => {
        const rows = deps.db('revenue_records').where({ organisation_id: auth.organisationId }).select('*');
        if (query.invoiceId) rows.where({ invoice_id: query.invoiceId });
        return paginate<RevenueRow, ReturnType<typeof toRevenue>>(rows, query, {
          searchColumns: ['invoice_id', 'invoice_item_id', 'status', 'currency'],
          orderBy: [
            { column: 'period', order: 'desc' },
            { column: 'id', order: 'desc' },
          ],
          map: toRevenue,
        });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/revenue/sync',
      summary: "Re-derive an invoice item's revenue records from its invoice",
      tag: 'Revenue',
      access: requires('RevenueService:syncRevenueByInvoiceItem'),
      body: z.object({ invoiceItemId: z.string().min(1) }),
      response: z.object({ invoiceItemId: z.string(), records: z.number().int() }),
      handler: async ({ body, auth }) => {
        const { records } = await deps.temporal.client.workflow.execute(revenueSyncWorkflow, {
          workflowId: revenueSyncWorkflowId(body.invoiceItemId),
          taskQueue: deps.temporal.taskQueue,
          args: [{ organisationId: auth.organisationId, invoiceItemId: body.invoiceItemId }],
          typedSearchAttributes: [{ key: OrganisationIdKey, value: auth.organisationId }],
          workflowIdConflictPolicy: 'USE_EXISTING',
        });
        return { invoiceItemId: body.invoiceItemId, records };
      },
    }),
  ];
}
