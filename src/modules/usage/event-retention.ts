import type { Knex } from 'knex';
import { addMonths, boundOf, monthKey, monthOf, partitionedMonths } from './event-partitions';

/** Rows deleted per statement: each a short transaction of its own. */
const DELETE_SLICE = 10_000;

/**
 * Why a month's events are kept past the retention window: an invoice overlapping the month that is not
 * paid or cancelled (billed but unpaid: a dispute or a credit note may still need its usage), or a metered
 * item of a contract active in the month whose usage charges do not reach the month's end (or the item's
 * end), so that the month is not billed yet.
 */
export type RetentionHold = 'unpaid-invoice' | 'unbilled-usage';

/**
 * Whether the UTC month is held. The usage an invoice or a charge takes is that of its days in the
 * organisation's time zone (usage windows are days in it, whatever the customer's zone), so each date is
 * turned into the instants it covers in that zone before it is compared with the month: in New York,
 * 1 October 02:00 UTC is still 30 September, a day of September's invoice. The dates a day either side of
 * the month only narrow the rows read; the zone decides.
 */
async function holdOn(db: Knex, organisationId: string, month: Date): Promise<RetentionHold | undefined> {
  const next = addMonths(month, 1);
  const { rows } = await db.raw<{ rows: { unpaid: boolean; unbilled: boolean }[] }>(
    `WITH organisation AS (
       SELECT COALESCE((SELECT timezone FROM organisation_settings WHERE organisation_id = :org), 'UTC') AS zone
     ),
     -- Worked out by Postgres, which has a day before 1 January of the year 1 (in 1 BC) and after 31 December 9999.
     around AS (
       SELECT (:start::timestamptz AT TIME ZONE 'UTC')::date - 1 AS day_before, (:end::timestamptz AT TIME ZONE 'UTC')::date AS day_after
     )
     SELECT
       EXISTS (
         SELECT 1 FROM invoices
         CROSS JOIN organisation CROSS JOIN around
         WHERE invoices.organisation_id = :org AND invoices.status IN ('draft', 'raised', 'sent')
           AND invoices.from_date <= around.day_after AND invoices.to_date >= around.day_before
           AND invoices.from_date::timestamp AT TIME ZONE organisation.zone < :end::timestamptz
           AND (invoices.to_date + 1)::timestamp AT TIME ZONE organisation.zone > :start::timestamptz
       ) AS unpaid,
       EXISTS (
         SELECT 1 FROM contract_plans cp
         CROSS JOIN organisation CROSS JOIN around
         -- The day, in the organisation's zone, of the month's last instant: billing must reach it.
         CROSS JOIN LATERAL (SELECT ((:end::timestamptz - interval '1 microsecond') AT TIME ZONE organisation.zone)::date AS last_day) month_end
         JOIN billing_plan_items item ON item.plan_id = cp.plan_id AND item.meter_id IS NOT NULL
         WHERE cp.organisation_id = :org AND cp.start_date <= around.day_after AND (cp.end_date IS NULL OR cp.end_date >= around.day_before)
           AND cp.start_date::timestamp AT TIME ZONE organisation.zone < :end::timestamptz
           AND (cp.end_date IS NULL OR (cp.end_date + 1)::timestamp AT TIME ZONE organisation.zone > :start::timestamptz)
           AND NOT EXISTS (
             SELECT 1 FROM charges
             JOIN invoices ON invoices.id = charges.invoice_id AND invoices.status <> 'cancelled'
             WHERE charges.contract_plan_id = cp.id AND charges.plan_item_id = item.id AND charges.kind = 'usage'
               AND charges.period_to >= LEAST(month_end.last_day, COALESCE(cp.end_date, month_end.last_day))
           )
       ) AS unbilled`,
    { org: organisationId, start: boundOf(month), end: boundOf(next) },
  );
  if (rows[0]?.unpaid) return 'unpaid-invoice';
  if (rows[0]?.unbilled) return 'unbilled-usage';
  return undefined;
}

export interface RetentionOutcome {
  organisationId: string;
  /** Months whose events were deleted, as `2026-05`, with how many. */
  deleted: { month: string; events: number }[];
  /** Months past the window whose events are kept, and why. */
  held: { month: string; reason: RetentionHold }[];
}

/**
 * The UTC months before the window that hold events of the organisation, ascending: of the months that
 * have a partition, those with at least one of its events (one index probe each), and the months of its
 * events in the default partition.
 */
async function expiredMonths(db: Knex, organisationId: string, before: Date): Promise<Date[]> {
  const months: Date[] = [];
  for (const key of await partitionedMonths(db)) {
    const month = new Date(`${key}-01T00:00:00Z`);
    if (addMonths(month, 1) > before) break;
    const { rows } = await db.raw<{ rows: unknown[] }>(
      'SELECT 1 FROM usage_events WHERE organisation_id = ? AND "timestamp" >= ? AND "timestamp" < ? LIMIT 1',
      [organisationId, month.toISOString(), addMonths(month, 1).toISOString()],
    );
    if (rows.length > 0) months.push(month);
  }
  const strays = await db.raw<{ rows: { month: Date }[] }>(
    `SELECT DISTINCT date_trunc('month', "timestamp" AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS month
     FROM usage_events_default WHERE organisation_id = ? AND "timestamp" < ?`,
    [organisationId, before.toISOString()],
  );
  const known = new Set(months.map((month) => month.getTime()));
  for (const { month } of strays.rows) if (!known.has(month.getTime())) months.push(month);
  return months.sort((a, b) => a.getTime() - b.getTime());
}

/**
 * Deletes the organisation's events of every UTC month that ended `months` months or more before the
 * current month began, unless the month is held (see `RetentionHold`). The events go in slices, each its
 * own statement, so that no lock is held long; their eventIds stay claimed, so that an event sent again
 * after its month was deleted is still a duplicate. Rollups, counters and the charges already made keep
 * what the events added up to: a meter's query still answers for a deleted month (a `unique_count`,
 * which reads raw events, no longer does).
 */
export async function applyRetention(db: Knex, organisationId: string, months: number, now: Date, onProgress: () => void = () => {}): Promise<RetentionOutcome> {
  const before = addMonths(monthOf(now), -months);
  const outcome: RetentionOutcome = { organisationId, deleted: [], held: [] };
  for (const month of await expiredMonths(db, organisationId, before)) {
    const reason = await holdOn(db, organisationId, month);
    if (reason) {
      outcome.held.push({ month: monthKey(month), reason });
      continue;
    }
    let events = 0;
    for (;;) {
      const deleted = await db.raw<{ rowCount: number }>(
        `DELETE FROM usage_events WHERE (id, "timestamp") IN (
           SELECT id, "timestamp" FROM usage_events WHERE organisation_id = ? AND "timestamp" >= ? AND "timestamp" < ? LIMIT ${DELETE_SLICE}
         )`,
        [organisationId, month.toISOString(), addMonths(month, 1).toISOString()],
      );
      events += deleted.rowCount;
      onProgress();
      if (deleted.rowCount < DELETE_SLICE) break;
    }
    outcome.deleted.push({ month: monthKey(month), events });
  }
  return outcome;
}
