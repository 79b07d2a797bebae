import {
  MONTHS,
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type CalendarSpec,
  type ScheduleDescription,
  type ScheduleHandle,
  type ScheduleUpdateOptions,
} from '@temporalio/client';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import { deleted } from '../../http/schemas';
import type { WorkflowServiceDeps } from '../../temporal/client';
import type { InvoiceRun, InvoiceRunControlService } from '../invoice-runs';
import { getOrganisationSettings } from '../organisation-settings';
import type { InvoiceRunInput } from '../../../workflows/invoice-run.types';
import { invoiceRunScheduleId, invoiceRunWorkflowId, searchAttributes } from '../../../workflows/ids';
import { createInvoiceRunScheduleRepository, type InvoiceRunScheduleRow, type ScheduleChanges } from './invoice-run-schedules.repository';
import type {
  BackfillBody,
  Calendar,
  CreateScheduleBody,
  InvoiceRunSchedule,
  InvoiceRunScheduleDetail,
  UpdateScheduleBody,
} from './invoice-run-schedules.schemas';

/** Started by name: the API never loads workflow code. */
const INVOICE_RUN_WORKFLOW = 'invoiceRunWorkflow';

/**
 * A Temporal that was down up to a day takes the dates it missed once it is back (SKIP: one at a time);
 * a longer outage is made good with a backfill.
 */
const CATCHUP_WINDOW = '1 day';

/** A backfill spans at most this: a year of missed dates, not a flood of runs from a typo. */
const MAX_BACKFILL_MS = 366 * 24 * 60 * 60 * 1000;

export function toSchedule(row: InvoiceRunScheduleRow): InvoiceRunSchedule {
  return {
    id: row.id,
    name: row.name,
    cron: row.cron,
    calendar: row.calendar,
    timezone: row.timezone,
    paused: row.paused,
    temporalScheduleId: invoiceRunScheduleId(row.organisation_id, row.id),
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function calendarSpec(calendar: Calendar): CalendarSpec {
  return {
    minute: calendar.minute,
    hour: calendar.hour,
    dayOfMonth: calendar.dayOfMonth,
    month: calendar.month ? calendar.month.map((month) => MONTHS[month - 1]!) : '*',
  };
}

/** Everything the Temporal Schedule is, derived from the row alone: creating and updating push the same. */
function scheduleDefinition(row: InvoiceRunScheduleRow, taskQueue: string): ScheduleUpdateOptions {
  const input: InvoiceRunInput = { organisationId: row.organisation_id, timezone: row.timezone, scheduleId: row.id };
  return {
    spec: { ...(row.cron ? { cronExpressions: [row.cron] } : { calendars: [calendarSpec(row.calendar!)] }), timezone: row.timezone },
    action: {
      type: 'startWorkflow',
      workflowType: INVOICE_RUN_WORKFLOW,
      taskQueue,
      // The schedule's id takes the run id's place; Temporal appends each scheduled time to it.
      workflowId: invoiceRunWorkflowId(row.id),
      args: [input],
      ...searchAttributes({ organisationId: row.organisation_id }, INVOICE_RUN_WORKFLOW),
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: CATCHUP_WINDOW },
    state: { paused: row.paused, note: row.paused ? 'Paused through the API' : '' },
    // On the Schedule too, so the Schedules page filters by organisation.
    ...searchAttributes({ organisationId: row.organisation_id }),
  };
}

/** Temporal refuses a spec with a TypeError; the edge checks should have caught it, but the caller still gets a 400. */
function refusedSpec(error: unknown): never {
  if (error instanceof TypeError) throw AppError.validation(`Temporal refused the schedule: ${error.message}`, 'body');
  throw error;
}

function temporalView(description: ScheduleDescription): InvoiceRunScheduleDetail['temporal'] {
  const { info, state } = description;
  return {
    paused: state.paused,
    note: state.note || null,
    nextActionTimes: info.nextActionTimes.map((time) => time.toISOString()),
    recentActions: info.recentActions.map((action) => ({
      scheduledAt: action.scheduledAt.toISOString(),
      takenAt: action.takenAt.toISOString(),
      workflowId: action.action.workflow.workflowId,
    })),
    runningWorkflowIds: info.runningActions.map((action) => action.workflow.workflowId),
    actionsTaken: info.numActionsTaken,
    actionsSkippedOverlap: info.numActionsSkippedOverlap,
    actionsMissedCatchupWindow: info.numActionsMissedCatchupWindow,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Backfill bounds: a date is a whole day in the schedule's zone.

/** The wall-clock reading of `instant` in `zone`, as if that reading were UTC. */
function wallClock(instant: number, zone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(instant);
  const part = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)!.value);
  const reading = new Date(Date.UTC(2000, part('month') - 1, part('day'), part('hour'), part('minute'), part('second')));
  return reading.setUTCFullYear(part('year'));
}

/** The instant a calendar day (`YYYY-MM-DD`) starts in `zone`. */
function startOfDay(date: string, zone: string): number {
  const midnight = Date.parse(`${date}T00:00:00Z`);
  // The zone's offset at a first guess, then at the answer itself, in case a DST change lies between.
  const guess = midnight - (wallClock(midnight, zone) - midnight);
  return midnight - (wallClock(guess, zone) - guess);
}

const isDate = (value: string) => value.length === 10;

function backfillRange(body: BackfillBody, zone: string): { start: Date; end: Date } {
  const start = isDate(body.from) ? startOfDay(body.from, zone) : Date.parse(body.from);
  const nextDay = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  // A date `to` includes its whole day: up to the last millisecond before the next day starts.
  const end = isDate(body.to) ? startOfDay(nextDay(body.to), zone) - 1 : Date.parse(body.to);
  if (end < start) throw AppError.validation('must not be before from', 'body.to');
  if (end - start > MAX_BACKFILL_MS) throw AppError.validation('must be at most 366 days after from', 'body.to');
  return { start: new Date(start), end: new Date(end) };
}

// ---------------------------------------------------------------------------------------------------------

/**
 * Invoice-run schedules: a row each in Postgres, the source of truth, and a Temporal Schedule each that
 * starts the organisation's invoice runs. Every write changes the row and pushes the whole row to the
 * Schedule under the row's lock; a Schedule that has gone missing (deleted on the Temporal UI) is
 * rebuilt from the row by the next read or write that needs it.
 */
export function createInvoiceRunScheduleService(deps: WorkflowServiceDeps & { runs: Pick<InvoiceRunControlService, 'startForSchedule'> }) {
  const { db, temporal } = deps;
  const schedules = createInvoiceRunScheduleRepository(db);
  const scheduleClient = () => temporal.client.schedule;
  const handleOf = (row: InvoiceRunScheduleRow) => scheduleClient().getHandle(invoiceRunScheduleId(row.organisation_id, row.id));

  async function createSchedule(row: InvoiceRunScheduleRow): Promise<void> {
    await scheduleClient().create({ scheduleId: invoiceRunScheduleId(row.organisation_id, row.id), ...scheduleDefinition(row, temporal.taskQueue) });
  }

  /** Runs `call` on the row's Schedule, rebuilding the Schedule first if Temporal no longer has it. */
  async function onSchedule<T>(row: InvoiceRunScheduleRow, call: (handle: ScheduleHandle) => Promise<T>): Promise<T> {
    try {
      return await call(handleOf(row));
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
      // Another request may have rebuilt it a moment ago, from the same row.
      await createSchedule(row).catch((refused: unknown) => {
        if (!(refused instanceof ScheduleAlreadyRunning)) throw refused;
      });
      return call(handleOf(row));
    }
  }

  /** Deletes the Temporal Schedule of the schedule; one already gone (deleted on the Temporal UI) is as good. */
  async function deleteSchedule(organisationId: string, id: string): Promise<void> {
    await scheduleClient()
      .getHandle(invoiceRunScheduleId(organisationId, id))
      .delete()
      .catch((error: unknown) => {
        if (!(error instanceof ScheduleNotFoundError)) throw error;
      });
  }

  const push = (row: InvoiceRunScheduleRow) => onSchedule(row, (handle) => handle.update(() => scheduleDefinition(row, temporal.taskQueue)));

  async function findRow(organisationId: string, id: string): Promise<InvoiceRunScheduleRow> {
    return orNotFound(await schedules.find(organisationId, id), 'Invoice run schedule');
  }

  /**
   * Changes the row and its Schedule together: the row stays locked until Temporal has taken the change,
   * and a Temporal that refuses or does not answer rolls the row back.
   */
  async function change(organisationId: string, id: string, changes: ScheduleChanges): Promise<InvoiceRunSchedule> {
    return db.transaction(async (trx) => {
      const repository = createInvoiceRunScheduleRepository(trx);
      orNotFound(await repository.lock(organisationId, id), 'Invoice run schedule');
      const row = await repository.update(organisationId, id, changes);
      await temporal.bounded(() => push(row)).catch(refusedSpec);
      return toSchedule(row);
    });
  }

  return {
    async create(organisationId: string, createdBy: string, body: CreateScheduleBody): Promise<InvoiceRunSchedule> {
      const row = await schedules.create(organisationId, {
        name: body.name,
        cron: body.cron ?? null,
        calendar: body.calendar ?? null,
        timezone: body.timezone ?? (await getOrganisationSettings(deps.db, organisationId)).timezone,
        paused: body.paused,
        createdBy,
      });
      try {
        await temporal.bounded(() => createSchedule(row));
      } catch (error) {
        // No row without its Schedule: the caller gets the error and nothing is left behind. A Temporal
        // that did not answer in time may still have made the Schedule: it is deleted too, if it can be
        // now; else the first run it starts finds no row and deletes it (`dropIfOrphan`).
        await schedules.delete(organisationId, row.id);
        await temporal.bounded(() => deleteSchedule(organisationId, row.id)).catch(() => undefined);
        refusedSpec(error);
      }
      return toSchedule(row);
    },

    /**
     * For a run its Temporal Schedule started: true when the schedule's row is gone (a create that Temporal
     * took after the API had given up on it), after deleting that Schedule, so that it starts no other run.
     */
    async dropIfOrphan(organisationId: string, id: string): Promise<boolean> {
      if (await schedules.find(organisationId, id)) return false;
      await temporal.bounded(() => deleteSchedule(organisationId, id));
      return true;
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<InvoiceRunSchedule>> {
      const page = await schedules.list(organisationId, paging);
      return { ...page, items: page.items.map(toSchedule) };
    },

    /** The row and Temporal's view of its Schedule: the next times, what it started lately, what still runs. */
    async get(organisationId: string, id: string): Promise<InvoiceRunScheduleDetail> {
      const row = await findRow(organisationId, id);
      const description = await temporal.bounded(() => onSchedule(row, (handle) => handle.describe()));
      return { ...toSchedule(row), temporal: temporalView(description) };
    },

    /** A new cron expression replaces a calendar and the other way round. */
    async update(organisationId: string, id: string, body: UpdateScheduleBody): Promise<InvoiceRunSchedule> {
      const spec = body.cron !== undefined ? { cron: body.cron, calendar: null } : body.calendar !== undefined ? { cron: null, calendar: body.calendar } : {};
      return change(organisationId, id, { name: body.name, timezone: body.timezone, paused: body.paused, ...spec });
    },

    async setPaused(organisationId: string, id: string, paused: boolean): Promise<InvoiceRunSchedule> {
      return change(organisationId, id, { paused });
    },

    async delete(organisationId: string, id: string) {
      return db.transaction(async (trx) => {
        const repository = createInvoiceRunScheduleRepository(trx);
        orNotFound(await repository.lock(organisationId, id), 'Invoice run schedule');
        // Already gone (deleted on the Temporal UI): the row is all that is left to delete.
        await temporal.bounded(() => deleteSchedule(organisationId, id));
        await repository.delete(organisationId, id);
        return deleted(id);
      });
    },

    /**
     * Starts a run now, paused or not, whatever else runs, and answers it. The run is recorded and its
     * workflow started here with the schedule's settings, rather than through the Temporal Schedule's own
     * trigger, which starts its workflow later and names no run: the caller gets the run's id at once.
     */
    async trigger(organisationId: string, id: string, triggeredBy: string): Promise<InvoiceRun> {
      const row = await findRow(organisationId, id);
      return deps.runs.startForSchedule(organisationId, triggeredBy, { id: row.id, timezone: row.timezone });
    },

    /**
     * Takes every action the schedule would have taken in the range, at once. Runs are idempotent per
     * billed period, so any overlap policy bills a period at most once; BUFFER_ALL runs the dates one after
     * another, oldest first, so that none is skipped and runs of one organisation never contend.
     */
    async backfill(organisationId: string, id: string, body: BackfillBody): Promise<InvoiceRunSchedule> {
      const row = await findRow(organisationId, id);
      const { start, end } = backfillRange(body, row.timezone);
      await temporal.bounded(() => onSchedule(row, (handle) => handle.backfill([{ start, end, overlap: ScheduleOverlapPolicy.BUFFER_ALL }])));
      return toSchedule(row);
    },
  };
}

export type InvoiceRunScheduleService = ReturnType<typeof createInvoiceRunScheduleService>;
