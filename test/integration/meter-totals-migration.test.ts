import { useDatabaseBefore } from './support/migration-database';

/**
 * The move from pending total rows to pending chunks, on a database of its own: what chunks had appended to
 * `meter_rollup_pending` is merged into the totals (added to the rows already there, latest by its order),
 * and the table of pending chunks takes its place.
 */
const MIGRATION = '20261127004400_meter_totals_pending_chunks.ts';
const database = useDatabaseBefore(MIGRATION, 'totals');

const org = { organisation_id: 'org_totals' };
const hour = '2026-10-20T12:00:00.000Z';
const part = (sum: string, count: number, max: string, latest: { value: string; at: string; id: string }) => ({
  sum,
  count,
  max,
  latest_value: latest.value,
  latest_timestamp: latest.at,
  latest_created_at: latest.at,
  latest_id: latest.id,
});

it('when pending total rows exist, then the migration adds them to the totals and leaves no pending row behind', async () => {
  await database.db('organisations').insert({ id: org.organisation_id, name: 'Totals Ltd' });
  await database.db('meters').insert({ ...org, id: 'mtr_totals', name: 'Tokens', metric: 'tokens', aggregation: 'sum', group_by: JSON.stringify(['model']) });
  const key = { meter_id: 'mtr_totals', ...org, grain: 'hour', dimension: 0, bucket_start: hour, group_value: ['a'] };
  await database.db('meter_rollup_totals').insert({ ...key, ...part('10', 2, '7', { value: '7', at: '2026-10-20T12:10:00Z', id: 'evt_1' }) });
  await database.db('meter_rollup_pending').insert([
    { ...key, ...part('5', 1, '5', { value: '5', at: '2026-10-20T12:40:00Z', id: 'evt_2' }) },
    { ...key, ...part('1', 1, '1', { value: '1', at: '2026-10-20T12:05:00Z', id: 'evt_3' }) },
    { ...key, group_value: ['b'], ...part('3', 1, '3', { value: '3', at: '2026-10-20T12:01:00Z', id: 'evt_4' }) },
  ]);

  await database.db.migrate.up({ name: MIGRATION });

  const totals = await database.db('meter_rollup_totals').where({ meter_id: 'mtr_totals' }).orderBy('group_value').select('group_value', 'sum', 'count', 'max', 'latest_value', 'latest_id');
  expect(totals.map((row) => ({ ...row, sum: Number(row.sum), count: Number(row.count), max: Number(row.max), latest_value: Number(row.latest_value) }))).toEqual([
    { group_value: ['a'], sum: 16, count: 4, max: 7, latest_value: 5, latest_id: 'evt_2' },
    { group_value: ['b'], sum: 3, count: 1, max: 3, latest_value: 3, latest_id: 'evt_4' },
  ]);
  expect(await database.db.schema.hasTable('meter_rollup_pending')).toBe(false);
  expect(await database.db('meter_totals_pending').count<Array<{ count: string }>>({ count: '*' })).toEqual([{ count: '0' }]);
});
