import { z } from 'zod';
import { atLeastOne, ianaTimeZone, isoDateOrDateTime, text, timestamps } from '../../http/schemas';

// ---------------------------------------------------------------------------------------------------------
// Cron expressions: the five classic fields, checked here so that a mistake answers 400 with the field
// at fault. What passes is a subset of what Temporal parses (it also takes longer name prefixes, seconds
// and years), so Temporal never refuses an expression this check lets through.

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

const CRON_FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES, firstName: 1 },
  // 0 and 7 are both Sunday.
  { name: 'day of week', min: 0, max: 7, names: DAY_NAMES, firstName: 0 },
] as const;

type CronField = (typeof CRON_FIELDS)[number];

function cronValue(field: CronField, text: string): number | undefined {
  const named = 'names' in field ? field.names.indexOf(text.toLowerCase()) : -1;
  if (named >= 0 && 'firstName' in field) return named + field.firstName;
  if (!/^\d{1,2}$/.test(text)) return undefined;
  const value = Number(text);
  return value >= field.min && value <= field.max ? value : undefined;
}

/** What is wrong with one comma-separated item of a field (`*`, `5`, `1-5`, `*\/15`, `MON-FRI`), if anything. */
function cronItemProblem(field: CronField, item: string): string | undefined {
  const [range = '', step, ...extra] = item.split('/');
  if (extra.length > 0 || (step !== undefined && !/^[1-9]\d{0,1}$/.test(step))) return `${field.name}: a step is one number from 1 to 99 after a single /`;
  if (range === '*') return undefined;
  const [first = '', last, ...more] = range.split('-');
  const start = cronValue(field, first);
  const end = last === undefined ? start : cronValue(field, last);
  if (more.length > 0 || start === undefined || end === undefined) return `${field.name}: each value must be * or from ${field.min} to ${field.max}`;
  if (end < start) return `${field.name}: a range must not end before it starts`;
  return undefined;
}

/** The values a valid field takes (`*`, lists, ranges, steps). */
function cronValues(field: CronField, text: string): Set<number> {
  const values = new Set<number>();
  for (const item of text.split(',')) {
    const [range = '', step = '1'] = item.split('/');
    const [first = '', last] = range.split('-');
    const start = range === '*' ? field.min : cronValue(field, first)!;
    const end = range === '*' ? field.max : last === undefined ? (item.includes('/') ? field.max : start) : cronValue(field, last)!;
    for (let value = start; value <= end; value += Number(step)) values.add(value);
  }
  return values;
}

/** The most days each month has, 1 to 12 (February in a leap year). */
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Why days of the month and months never meet (the 31st in April only, the 30th of February), if they never do. */
export function neverRuns(days: ReadonlySet<number>, months: ReadonlySet<number>): string | undefined {
  for (const month of months) for (const day of days) if (day <= MONTH_DAYS[month - 1]!) return undefined;
  return `day of month: no month given has day ${Math.min(...days)}, so the schedule would never run`;
}

/** Why a cron expression is not five valid fields, or would never run, or undefined when it is fine. */
export function cronProblem(expression: string): string | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== CRON_FIELDS.length) return 'must have 5 fields: minute hour day-of-month month day-of-week';
  for (const [index, field] of CRON_FIELDS.entries()) {
    for (const item of fields[index]!.split(',')) {
      const problem = cronItemProblem(field, item);
      if (problem) return problem;
    }
  }
  // A time must match the day of the month and the day of the week both: days that never come never run.
  return neverRuns(cronValues(CRON_FIELDS[2], fields[2]!), cronValues(CRON_FIELDS[3], fields[3]!));
}

// Five runs of storable characters (no NUL, which the router refuses anyway) between blanks, as the
// document states it; the field rules above need code.
const FIELD = '[^\\s\\u0000]+';
const FIVE_FIELDS = new RegExp(`^\\s*${FIELD}(?:\\s+${FIELD}){4}\\s*$`);

export const cron = z
  .string()
  .max(100)
  .regex(FIVE_FIELDS, { message: 'must have 5 fields: minute hour day-of-month month day-of-week', abort: true })
  .superRefine((value, ctx) => {
    const problem = cronProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform((value) => value.trim().split(/\s+/).join(' '))
  .describe('Five fields: minute hour day-of-month month day-of-week, e.g. `0 6 1 * *` (06:00 on the 1st of every month)');

// ---------------------------------------------------------------------------------------------------------
// Calendars: the same thing spelled as numbers, for callers that would rather not write cron.

export const calendar = z
  .object({
    minute: z.int().min(0).max(59),
    hour: z.int().min(0).max(23),
    dayOfMonth: z.int().min(1).max(31).describe('a month without this day is skipped: use 28 or less to run every month'),
    month: z
      .array(z.int().min(1).max(12))
      .min(1)
      .max(12)
      .transform((months) => [...new Set(months)].sort((a, b) => a - b))
      .optional()
      .describe('the months to run in, 1 to 12; every month when absent; at least one must have the dayOfMonth'),
  })
  .superRefine((value, ctx) => {
    const problem = value.month && neverRuns(new Set([value.dayOfMonth]), new Set(value.month));
    if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['dayOfMonth'] });
  });

export type Calendar = z.output<typeof calendar>;

/** Zones as the runtime's time-zone database names them (as organisation settings take them). */
export const timezone = ianaTimeZone.describe('IANA time zone the schedule runs in, e.g. Europe/Berlin');

// ---------------------------------------------------------------------------------------------------------
// Request bodies.

const SPEC_FIELDS = ['cron', 'calendar'] as const;

export const createScheduleBody = z
  .object({
    name: text(200),
    cron: cron.optional(),
    calendar: calendar.optional(),
    timezone: timezone.optional().describe("IANA time zone the schedule runs in, e.g. Europe/Berlin; the organisation's when absent"),
    paused: z.boolean().default(false).describe('create the schedule paused'),
  })
  .superRefine((body, ctx) => {
    if ((body.cron === undefined) === (body.calendar === undefined)) ctx.addIssue({ code: 'custom', message: 'give exactly one of cron, calendar' });
  })
  .meta({ oneOf: SPEC_FIELDS.map((field) => ({ required: [field] })) });

export const updateScheduleBody = atLeastOne({
  name: text(200).optional(),
  cron: cron.optional().describe('replaces the calendar, if the schedule has one'),
  calendar: calendar.optional().describe('replaces the cron expression, if the schedule has one'),
  timezone: timezone.optional(),
  paused: z.boolean().optional(),
})
  .refine((body) => body.cron === undefined || body.calendar === undefined, 'give at most one of cron, calendar')
  // At most one of them: a body without cron, or one without calendar.
  .meta({ allOf: [{ anyOf: SPEC_FIELDS.map((field) => ({ properties: { [field]: false } })) }] });

export const backfillBody = z.object({
  from: isoDateOrDateTime.describe("inclusive; a date starts at midnight in the schedule's zone"),
  to: isoDateOrDateTime.describe("inclusive; a date ends at midnight after it in the schedule's zone; at most 366 days after from"),
});

export type CreateScheduleBody = z.output<typeof createScheduleBody>;
export type UpdateScheduleBody = z.output<typeof updateScheduleBody>;
export type BackfillBody = z.output<typeof backfillBody>;

// ---------------------------------------------------------------------------------------------------------
// Answers.

export const scheduleSchema = z.object({
  id: z.string(),
  name: z.string(),
  cron: z.string().nullable(),
  calendar: z.object({ minute: z.number(), hour: z.number(), dayOfMonth: z.number(), month: z.array(z.number()).optional() }).nullable(),
  timezone: z.string(),
  paused: z.boolean(),
  temporalScheduleId: z.string().describe("the Schedule's id on the Temporal UI's Schedules page"),
  createdBy: z.string().nullable(),
  ...timestamps,
});

export const scheduleDetailSchema = scheduleSchema.extend({
  temporal: z
    .object({
      paused: z.boolean(),
      note: z.string().nullable(),
      nextActionTimes: z.array(z.string()).describe('ISO 8601 date-times, soonest first'),
      recentActions: z.array(z.object({ scheduledAt: z.string(), takenAt: z.string(), workflowId: z.string() })).describe('oldest first'),
      runningWorkflowIds: z.array(z.string()),
      actionsTaken: z.number(),
      actionsSkippedOverlap: z.number(),
      actionsMissedCatchupWindow: z.number(),
    })
    .describe("Temporal's view of the Schedule"),
});

export type InvoiceRunSchedule = z.input<typeof scheduleSchema>;
export type InvoiceRunScheduleDetail = z.input<typeof scheduleDetailSchema>;
