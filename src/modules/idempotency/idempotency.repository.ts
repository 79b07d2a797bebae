import type { Knex } from 'knex';
import type { SecretBox } from '../../security/secret-box';

export interface IdempotencyRow {
  organisation_id: string;
  route: string;
  key: string;
  fingerprint: string;
  state: 'running' | 'done' | 'retryable';
  response_status: number | null;
  response_body: unknown;
  locked_until: Date | null;
  /** The run holding (or last holding) the key. */
  run_token: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface KeyRef {
  organisationId: string;
  route: string;
  key: string;
}

const where = (ref: KeyRef) => ({ organisation_id: ref.organisationId, route: ref.route, key: ref.key });

/**
 * Keys and the answers they replay. An answer is kept sealed (it may carry a secret shown once, such as a
 * new client secret or a webhook signing secret), so that a replay can give it back and Postgres never
 * holds it in the clear.
 */
export function createIdempotencyRepository(db: Knex, secrets: SecretBox) {
  return {
    /**
     * Takes the key for one run, in one statement: a new key; the same request again after an answer that
     * was not final; a run whose lease has lapsed (its process died); or a key older than `ttlSeconds`,
     * which starts afresh. Undefined when another request holds or has answered the key.
     */
    async claim(ref: KeyRef, fingerprint: string, leaseSeconds: number, ttlSeconds: number, runToken: string): Promise<boolean> {
      const result = await db.raw<{ rowCount: number }>(
        `INSERT INTO idempotency_keys AS k (organisation_id, route, key, fingerprint, state, locked_until, run_token)
         VALUES (:organisationId, :route, :key, :fingerprint, 'running', now() + make_interval(secs => :leaseSeconds), :runToken)
         ON CONFLICT (organisation_id, route, key) DO UPDATE
            SET state = 'running',
                locked_until = EXCLUDED.locked_until,
                run_token = EXCLUDED.run_token,
                fingerprint = EXCLUDED.fingerprint,
                response_status = NULL,
                response_body = NULL,
                created_at = CASE WHEN k.created_at < now() - make_interval(secs => :ttlSeconds) THEN now() ELSE k.created_at END,
                updated_at = now()
          WHERE k.created_at < now() - make_interval(secs => :ttlSeconds)
             OR (k.fingerprint = EXCLUDED.fingerprint
                 AND (k.state = 'retryable' OR (k.state = 'running' AND k.locked_until < now())))`,
        { ...ref, fingerprint, leaseSeconds, ttlSeconds, runToken },
      );
      return result.rowCount === 1;
    },

    async find(ref: KeyRef): Promise<IdempotencyRow | undefined> {
      const row = await db<IdempotencyRow>('idempotency_keys').where(where(ref)).first();
      return row && secrets.isSealed(row.response_body) ? { ...row, response_body: JSON.parse(secrets.open(row.response_body)) } : row;
    },

    /** Records the answer of the run holding the key; `final` answers are replayed, others let a retry run again. */
    async finish(ref: KeyRef, fingerprint: string, runToken: string, answer: { status: number; body: unknown; final: boolean }): Promise<void> {
      await db('idempotency_keys')
        .where({ ...where(ref), fingerprint, state: 'running', run_token: runToken })
        .update({
          state: answer.final ? 'done' : 'retryable',
          response_status: answer.final ? answer.status : null,
          response_body: answer.final ? JSON.stringify(secrets.seal(JSON.stringify(answer.body))) : null,
          locked_until: null,
          updated_at: db.fn.now(),
        });
    },

    /** Gives the key back if the run `runToken` holds it, for a retry to run: that run took it but never ran. */
    async release(ref: KeyRef, runToken: string): Promise<void> {
      await db('idempotency_keys').where({ ...where(ref), state: 'running', run_token: runToken }).update({ state: 'retryable', locked_until: null, updated_at: db.fn.now() });
    },

    /** Answers an older version kept in the clear, sealed: run once as a worker starts. */
    async sealPlainAnswers(): Promise<number> {
      const rows = await db('idempotency_keys')
        .whereNotNull('response_body')
        .whereRaw("jsonb_typeof(response_body) <> 'string'")
        .select<Array<{ organisation_id: string; route: string; key: string; response_body: unknown }>>('organisation_id', 'route', 'key', 'response_body');
      for (const row of rows) {
        await db('idempotency_keys')
          .where({ organisation_id: row.organisation_id, route: row.route, key: row.key })
          .update({ response_body: JSON.stringify(secrets.seal(JSON.stringify(row.response_body))) });
      }
      return rows.length;
    },

    /** Keys older than the retention are never replayed; deleting them keeps the table small. */
    async pruneOlderThan(seconds: number): Promise<number> {
      return db('idempotency_keys').where('created_at', '<', db.raw('now() - make_interval(secs => ?)', [seconds])).delete();
    },
  };
}

export type IdempotencyRepository = ReturnType<typeof createIdempotencyRepository>;
