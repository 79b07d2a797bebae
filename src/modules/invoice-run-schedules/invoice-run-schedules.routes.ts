import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { runSchema } from '../invoice-runs';
import { backfillBody, createScheduleBody, scheduleDetailSchema, scheduleSchema, updateScheduleBody } from './invoice-run-schedules.schemas';

const TAG = 'Invoice run schedules';
/** Scheduling invoicing is an Admin's decision; a SystemUser may start runs but not schedule them. */
const access = requires('InvoiceRunScheduleService:manageSchedules');

export function invoiceRunScheduleRoutes(deps: AppDeps): Route[] {
  const schedules = deps.services.invoiceRunSchedules;

  return [
    defineRoute({
      method: 'post',
      path: '/invoice-run-schedules',
      summary: 'Schedule invoice runs with a cron expression or a calendar, in a time zone (Admin only)',
      tag: TAG,
      access,
      body: createScheduleBody,
      response: scheduleSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => schedules.create(auth.organisationId, auth.subjectId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/invoice-run-schedules',
      summary: 'List invoice-run schedules (Admin only)',
      tag: TAG,
      access,
      query: pageQuery,
      response: pageOf(scheduleSchema),
      handler: async ({ query, auth }) => schedules.list(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/invoice-run-schedules/{id}',
      summary: "Read an invoice-run schedule with Temporal's view of it: next times, recent runs (Admin only)",
      tag: TAG,
      access,
      params: idParam,
      response: scheduleDetailSchema,
      handler: async ({ params, auth }) => schedules.get(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/invoice-run-schedules/{id}',
      summary: 'Change an invoice-run schedule: name, cron or calendar, time zone, paused (Admin only)',
      tag: TAG,
      access,
      params: idParam,
      body: updateScheduleBody,
      response: scheduleSchema,
      handler: async ({ params, body, auth }) => schedules.update(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/invoice-run-schedules/{id}',
      summary: 'Delete an invoice-run schedule; runs it started go on (Admin only)',
      tag: TAG,
      access,
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => schedules.delete(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'post',
      path: '/invoice-run-schedules/{id}/pause',
      summary: 'Pause an invoice-run schedule: it starts no run until unpaused (Admin only)',
      tag: TAG,
      access,
      params: idParam,
      response: scheduleSchema,
      handler: async ({ params, auth }) => schedules.setPaused(auth.organisationId, params.id, true),
    }),
    defineRoute({
      method: 'post',
      path: '/invoice-run-schedules/{id}/unpause',
      summary: 'Unpause an invoice-run schedule; the dates it passed while paused are not run (Admin only)',
      tag: TAG,
      access,
      params: idParam,
      response: scheduleSchema,
      handler: async ({ params, auth }) => schedules.setPaused(auth.organisationId, params.id, false),
    }),
    defineRoute({
      method: 'post',
      path: '/invoice-run-schedules/{id}/trigger',
      summary: "Start an invoice run now, for today's date in the schedule's zone, paused or not; answers the run it started (Admin only)",
      tag: TAG,
      access,
      params: idParam,
      response: runSchema.describe('The run the trigger started, as GET /invoice-runs/{id} shows it: follow its id there until its status is no longer running'),
      successStatus: 201,
      handler: async ({ params, auth }) => schedules.trigger(auth.organisationId, params.id, auth.subjectId),
    }),
    defineRoute({
      method: 'post',
      path: '/invoice-run-schedules/{id}/backfill',
      summary: 'Run every date the schedule had between from and to, oldest first (Admin only)',
      tag: TAG,
      access,
      params: idParam,
      body: backfillBody,
      response: scheduleSchema,
      handler: async ({ params, body, auth }) => schedules.backfill(auth.organisationId, params.id, body),
    }),
  ];
}
