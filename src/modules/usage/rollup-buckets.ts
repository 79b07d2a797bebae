import { utcMidnight } from '../../domain/iso-dates';

/**
 * The arithmetic of rollup buckets: 15 minutes wide, aligned on 2000-01-01T00:00Z (so on every quarter
 * hour of UTC). Every time zone's offset today is a whole number of quarter hours, so each of its hours,
 * days and months starts on a bucket edge.
 */

/** The bucket width, in minutes and milliseconds. */
export const BUCKET_MINUTES = 15;
export const BUCKET_MS = BUCKET_MINUTES * 60_000;

/** The start of the bucket holding `instant`; the SQL twin is `date_bin('15 minutes', t, '2000-01-01Z')`. */
export function bucketOf(instant: Date): Date {
  return new Date(Math.floor(instant.getTime() / BUCKET_MS) * BUCKET_MS);
}

/** Whether an instant is a bucket edge, so that a window starting or ending there takes whole buckets. */
export const onBucketEdge = (instant: Date): boolean => bucketOf(instant).getTime() === instant.getTime();

/** The UTC day holding `instant`: a backfill slice. */
export function utcDayOf(instant: Date): { from: Date; to: Date } {
  const from = utcMidnight(instant.getUTCFullYear(), instant.getUTCMonth(), instant.getUTCDate());
  return { from, to: new Date(from.getTime() + 86_400_000) };
}
