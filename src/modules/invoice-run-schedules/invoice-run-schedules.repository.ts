import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { Calendar } from './invoice-run-schedules.schemas';

export interface InvoiceRunScheduleRow {
  id: string;
  organisation_id: string;
  name: string;
  cron: string | null;
  calendar: Calendar | null;
  timezone: string;
  paused: boolean;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export type ScheduleChanges = Partial<Pick<InvoiceRunScheduleRow, 'name' | 'cron' | 'calendar' | 'timezone' | 'paused'>>;

/** A jsonb value as knex must send it: text, or node-postgres would turn an array into a Postgres array. */
const calendarColumn = (calendar: Calendar | null | undefined) => (calendar === undefined ? undefined : calendar === null ? null : JSON.stringify(calendar));

/** Invoice-run schedules. `db` may be a transaction. */
export function createInvoiceRunScheduleRepository(db: Knex) {
  const scoped = (organisationId: string, id: string) => db<InvoiceRunScheduleRow>('invoice_run_schedules').where({ organisation_id: organisationId, id });

  return {
    async create(organisationId: string, schedule: Required<ScheduleChanges> & { createdBy: string }): Promise<InvoiceRunScheduleRow> {
      const [row] = await db('invoice_run_schedules')
        .insert({
          id: newId('irs'),
          organisation_id: organisationId,
          name: schedule.name,
          cron: schedule.cron,
          calendar: calendarColumn(schedule.calendar),
          timezone: schedule.timezone,
          paused: schedule.paused,
          created_by: schedule.createdBy,
        })
        .returning<InvoiceRunScheduleRow[]>('*');
      return row!;
    },

    async find(organisationId: string, id: string): Promise<InvoiceRunScheduleRow | undefined> {
      return scoped(organisationId, id).first();
    },

    /** The row, locked until the transaction `db` ends: writes to one schedule and its Temporal Schedule take turns. */
    async lock(organisationId: string, id: string): Promise<InvoiceRunScheduleRow | undefined> {
      return scoped(organisationId, id).forUpdate().first();
    },

    async update(organisationId: string, id: string, changes: ScheduleChanges): Promise<InvoiceRunScheduleRow> {
      const [row] = await scoped(organisationId, id)
        .update({ ...changes, calendar: calendarColumn(changes.calendar), updated_at: db.fn.now() } as Record<string, unknown>)
        .returning<InvoiceRunScheduleRow[]>('*');
      return row!;
    },

    async delete(organisationId: string, id: string): Promise<void> {
      await scoped(organisationId, id).delete();
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<InvoiceRunScheduleRow>> {
      return paginate<InvoiceRunScheduleRow, InvoiceRunScheduleRow>(db('invoice_run_schedules').where({ organisation_id: organisationId }).select('*'), paging, {
        searchColumns: ['name'],
        map: (row) => row,
      });
    },
  };
}
