import type { Options, Store, ClientRateLimitInfo } from 'express-rate-limit';
import type { Knex } from 'knex';
import type { Logger } from 'pino';

const PURGE_EVERY_MS = 60_000;

interface CounterRow {
  hits: number;
  resets_at: Date;
}

const info = (row: CounterRow): ClientRateLimitInfo => ({ totalHits: row.hits, resetTime: row.resets_at });

/**
 * A fixed-window counter per (limiter, key) in the `rate_limits` table, so that every API process on the
 * database counts the same hits. Each hit is one upsert: the row lock orders concurrent hits, and a
 * window that has passed restarts in the same statement.
 */
class PostgresStore implements Store {
  readonly localKeys = false;
  private windowMs = 60_000;

  constructor(
    private readonly db: Knex,
    readonly prefix: string,
  ) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    const row: CounterRow | undefined = await this.db('rate_limits')
      .select('hits', 'resets_at')
      .where({ limiter: this.prefix, key })
      .andWhere('resets_at', '>', this.db.fn.now())
      .first();
    return row && info(row);
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    const { rows } = await this.db.raw<{ rows: CounterRow[] }>(
      `INSERT INTO rate_limits AS r (limiter, key, hits, resets_at)
       VALUES (?, ?, 1, now() + ? * interval '1 millisecond')
       ON CONFLICT (limiter, key) DO UPDATE SET
         hits = CASE WHEN r.resets_at > now() THEN r.hits + 1 ELSE 1 END,
         resets_at = CASE WHEN r.resets_at > now() THEN r.resets_at ELSE excluded.resets_at END
       RETURNING hits, resets_at`,
      [this.prefix, key, this.windowMs],
    );
    return info(rows[0]!);
  }

  async decrement(key: string): Promise<void> {
    await this.db('rate_limits')
      .where({ limiter: this.prefix, key })
      .andWhere('resets_at', '>', this.db.fn.now())
      .update({ hits: this.db.raw('greatest(hits - 1, 0)') });
  }

  async resetKey(key: string): Promise<void> {
    await this.db('rate_limits').where({ limiter: this.prefix, key }).delete();
  }
}

export interface RateLimitStores {
  /** The store of one limiter, by its name (AppDeps.rateLimitStore). */
  storeFor: (name: string) => Store;
  /** Stops the purge; call before the database pool is destroyed. */
  close: () => void;
}

/**
 * Shared counters for every limiter of this process. Rows of windows that have passed are deleted once a
 * minute; each process purges, and the deletes of several processes do not conflict.
 */
export function createPostgresRateLimitStores(db: Knex, logger: Pick<Logger, 'warn'>): RateLimitStores {
  const purge = setInterval(() => {
    db('rate_limits')
      .where('resets_at', '<=', db.fn.now())
      .delete()
      // A purge that fails leaves expired rows for the next one; counting is unaffected.
      .catch((error: unknown) => logger.warn({ err: error }, 'rate-limit purge failed'));
  }, PURGE_EVERY_MS);
  purge.unref();
  return {
    storeFor: (name) => new PostgresStore(db, name),
    close: () => clearInterval(purge),
  };
}
