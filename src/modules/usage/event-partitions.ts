import type { Knex } from 'knex';
import { utcMidnight } from '../../domain/iso-dates';

/**
 * The event table's partitions: `usage_events` is partitioned by range of the event's `timestamp`, one
 * partition per UTC month (`usage_events_2026_11`), and a default partition (`usage_events_default`)
 * takes an event of a month that has none yet, so that no event is ever refused for its date.
 */

/** How many months after the current one have their partition made ahead. */
export const MONTHS_AHEAD = 3;

/** The longest a partition step waits for a lock on the event table; past it, the step fails and is tried again. */
const LOCK_TIMEOUT = '1s';

/** The first instant of the UTC month of `at`. */
export function monthOf(at: Date): Date {
  return utcMidnight(at.getUTCFullYear(), at.getUTCMonth(), 1);
}

export function addMonths(month: Date, months: number): Date {
  return utcMidnight(month.getUTCFullYear(), month.getUTCMonth() + months, 1);
}

/** `2026-11` */
export function monthKey(month: Date): string {
  return month.toISOString().slice(0, 7);
}

/** `usage_events_2026_11`; only for months of a four-digit year (others stay in the default partition). */
export function partitionName(month: Date): string {
  return `usage_events_${monthKey(month).replace('-', '_')}`;
}

/**
 * A month's first instant as Postgres reads it in a partition's bound: `2026-11-01 00:00:00+00`, and
 * `10000-01-01 00:00:00+00` for the end of December 9999, which `toISOString` would write as `+010000-…`,
 * a form Postgres refuses.
 */
export function boundOf(month: Date): string {
  return `${String(month.getUTCFullYear()).padStart(4, '0')}-${String(month.getUTCMonth() + 1).padStart(2, '0')}-01 00:00:00+00`;
}

const hasPartitionName = (month: Date) => month.getUTCFullYear() >= 1000 && month.getUTCFullYear() <= 9999;

/** The months that have a partition of their own, ascending (from `pg_inherits`: what is attached). */
export async function partitionedMonths(db: Knex): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { name: string }[] }>(
    `SELECT child.relname AS name FROM pg_inherits
     JOIN pg_class parent ON parent.oid = pg_inherits.inhparent
     JOIN pg_class child ON child.oid = pg_inherits.inhrelid
     WHERE parent.relname = 'usage_events' AND child.relname ~ '^usage_events_[0-9]{4}_[0-9]{2}$'
     ORDER BY child.relname`,
  );
  return rows.map((row) => row.name.slice('usage_events_'.length).replace('_', '-'));
}

/** The months the default partition holds events of, ascending. */
async function monthsInDefault(db: Knex): Promise<Date[]> {
  const { rows } = await db.raw<{ rows: { month: Date }[] }>(
    `SELECT DISTINCT date_trunc('month', "timestamp" AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS month FROM usage_events_default ORDER BY 1`,
  );
  return rows.map((row) => row.month).filter(hasPartitionName);
}

/**
 * Makes `month`'s partition unless it exists: a table of its own that takes the month's events out of the
 * default partition, checked to hold only its month, then attached. Reads go on throughout; writes through
 * the table wait for the step's transaction (a table of its own, the strays moved, the attach), and the
 * default partition, which holds only strays, is locked while its rows move. Every lock is waited for at
 * most a second: a step that cannot have one fails, and the next run tries again (the partition is made
 * months ahead). Answers the events moved, or undefined when
 * the partition was there already.
 */
export async function ensurePartition(db: Knex, month: Date): Promise<number | undefined> {
  const name = partitionName(month);
  const from = boundOf(month);
  const to = boundOf(addMonths(month, 1));
  return db.transaction(async (trx) => {
    // One maintenance at a time: a second waits for the first and finds its partition made.
    await trx.raw("SELECT pg_advisory_xact_lock(hashtext('usage_events partitions'))");
    await trx.raw(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
    const { rows } = await trx.raw<{ rows: unknown[] }>('SELECT 1 FROM pg_class WHERE relname = ?', [name]);
    if (rows.length > 0) return undefined;
    // Writes through the table wait until the partition is attached. Attaching alone would let an insert
    // that began before it route an event of the month to the default partition by the partitions it saw
    // then, and fail on the default partition's new bound (a constraint violation, which is not retried).
    await trx.raw('LOCK TABLE ONLY usage_events IN SHARE ROW EXCLUSIVE MODE');
    await trx.raw(`CREATE TABLE ${name} (LIKE usage_events INCLUDING DEFAULTS)`);
    await trx.raw(`ALTER TABLE ${name} ADD CONSTRAINT ${name}_month CHECK ("timestamp" >= '${from}' AND "timestamp" < '${to}')`);
    const moved = await trx.raw<{ rowCount: number }>(
      `WITH moved AS (DELETE FROM usage_events_default WHERE "timestamp" >= ? AND "timestamp" < ? RETURNING *) INSERT INTO ${name} SELECT * FROM moved`,
      [from, to],
    );
    await trx.raw(`ALTER TABLE usage_events ATTACH PARTITION ${name} FOR VALUES FROM ('${from}') TO ('${to}')`);
    // The partition's bound holds what the check held; the check was there so that attaching need not scan.
    await trx.raw(`ALTER TABLE ${name} DROP CONSTRAINT ${name}_month`);
    return moved.rowCount;
  });
}

export interface PartitionMaintenance {
  /** The months whose partition was made, as `2026-11`. */
  created: string[];
  /** Events moved out of the default partition into their month's. */
  moved: number;
}

/**
 * The current month and the `MONTHS_AHEAD` after it get their partitions, and so does every month the
 * default partition holds events of (an event sent for a month long past or far ahead lands there first).
 */
export async function maintainPartitions(db: Knex, now: Date, onProgress: () => void = () => {}): Promise<PartitionMaintenance> {
  const months = new Map<string, Date>();
  for (let ahead = 0; ahead <= MONTHS_AHEAD; ahead += 1) {
    const month = addMonths(monthOf(now), ahead);
    months.set(monthKey(month), month);
  }
  for (const month of await monthsInDefault(db)) months.set(monthKey(month), month);
  const result: PartitionMaintenance = { created: [], moved: 0 };
  for (const [key, month] of [...months].sort(([a], [b]) => a.localeCompare(b))) {
    const moved = await ensurePartition(db, month);
    if (moved !== undefined) {
      result.created.push(key);
      result.moved += moved;
    }
    onProgress();
  }
  return result;
}
