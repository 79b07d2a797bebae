import type { Knex } from 'knex';

/** One running worker, as it describes itself in its heartbeat. */
export interface WorkerIdentity {
  taskQueue: string;
  /** The worker's Temporal identity (`pid@host` unless configured otherwise). */
  identity: string;
  host: string;
  pid: number;
  startedAt: Date;
}

export interface TaskQueueHeartbeats {
  taskQueue: string;
  /** Workers whose last beat is no older than the freshness window. */
  alive: number;
  /** Age of the newest beat on the queue. */
  newestAgeSeconds: number;
}

/** `now() - interval`, in Postgres's clock, so that the hosts' clocks never matter. */
function secondsAgo(db: Knex, seconds: number): Knex.Raw {
  return db.raw('now() - make_interval(secs => ?)', [seconds]);
}

/** The `worker_heartbeats` table: one row per running worker and task queue, stamped every few seconds. */
export function createWorkerHeartbeatRepository(db: Knex) {
  const table = () => db('worker_heartbeats');
  return {
    /** Stamps the worker's row, creating it on the first beat. */
    async beat(worker: WorkerIdentity): Promise<void> {
      await table()
        .insert({ task_queue: worker.taskQueue, identity: worker.identity, host: worker.host, pid: worker.pid, started_at: worker.startedAt, beat_at: db.fn.now() })
        .onConflict(['task_queue', 'identity'])
        .merge(['host', 'pid', 'started_at', 'beat_at']);
    },

    async remove(taskQueue: string, identity: string): Promise<void> {
      await table().where({ task_queue: taskQueue, identity }).delete();
    },

    /** Forgets workers that stopped beating long ago (killed, or on a host that went away). */
    async pruneOlderThan(seconds: number): Promise<void> {
      await table().where('beat_at', '<', secondsAgo(db, seconds)).delete();
    },

    /** Whether some worker on the queue has beaten within the last `seconds`. */
    async hasBeatWithin(taskQueue: string, seconds: number): Promise<boolean> {
      const row = await table().where({ task_queue: taskQueue }).where('beat_at', '>=', secondsAgo(db, seconds)).first(db.raw('1 AS found'));
      return row !== undefined;
    },

    /** Per task queue: how many workers beat within `freshSeconds`, and how old the newest beat is. */
    async summary(freshSeconds: number): Promise<TaskQueueHeartbeats[]> {
      const rows = await table()
        .groupBy('task_queue')
        .orderBy('task_queue')
        .select<{ task_queue: string; alive: number; newest_age_seconds: number }[]>(
          'task_queue',
          db.raw('(count(*) FILTER (WHERE beat_at >= ?))::int AS alive', [secondsAgo(db, freshSeconds)]),
          db.raw('extract(epoch FROM now() - max(beat_at))::float8 AS newest_age_seconds'),
        );
      return rows.map((row) => ({ taskQueue: row.task_queue, alive: row.alive, newestAgeSeconds: row.newest_age_seconds }));
    },
  };
}

export type WorkerHeartbeatRepository = ReturnType<typeof createWorkerHeartbeatRepository>;
