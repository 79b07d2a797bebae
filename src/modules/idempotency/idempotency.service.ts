import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { SecretBox } from '../../security/secret-box';
import { AppError } from '../../domain/errors';
import { createIdempotencyRepository, type KeyRef } from './idempotency.repository';

/** How long a key is remembered: a retry within a day gets the first answer back. */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

/**
 * How long a run holds its key. Every request answers well within this (submits and Updates have their
 * own shorter bounds), so a key still `running` after it belongs to a process that died mid-request.
 */
const LEASE_SECONDS = 120;

/** How often an answer that could not be recorded (Postgres away) is tried again. */
const RECORD_RETRY_MS = 1_000;

/** Expired keys are deleted at most this often by each process, in the background of a request. */
const PRUNE_EVERY_MS = 60_000;

/** Whether the request runs (under its run's token, which its answer is recorded with), or the answer it gets back. */
export type Begin = { run: true; runToken: string } | { run: false; status: number; body: unknown };

/**
 * Answers are final when a retry must get them back unchanged: every 2xx but 202 (work accepted and
 * still going: a retry asks again and sees the outcome) and every 4xx. A 5xx is never final: the same
 * request may succeed later, and the domain's own keys keep that retry from doing anything twice.
 */
export function isFinalAnswer(status: number): boolean {
  return status < 500 && status !== 202;
}

export function createIdempotencyService(db: Knex, secrets: SecretBox) {
  const keys = createIdempotencyRepository(db, secrets);
  let lastPrune = 0;

  function pruneNowAndThen(): void {
    if (Date.now() - lastPrune < PRUNE_EVERY_MS) return;
    lastPrune = Date.now();
    keys.pruneOlderThan(IDEMPOTENCY_TTL_SECONDS).catch(() => {
      lastPrune = 0;
    });
  }

  /**
   * Answers given but not recorded, and keys taken by a claim whose reply was lost, by key: without them, a
   * retry after Postgres comes back would find the key still `running` until its lease ends. One attempt at a time, so a late attempt never lands
   * on the key's next run; the entry goes once an attempt succeeds, or half a lease after the answer.
   */
  const unrecorded = new Map<string, () => Promise<void>>();
  const mapKey = (ref: KeyRef) => JSON.stringify([ref.organisationId, ref.route, ref.key]);

  function recordLater(ref: KeyRef, record: () => Promise<void>): void {
    const key = mapKey(ref);
    const giveUpAt = Date.now() + (LEASE_SECONDS * 1000) / 2;
    let attempt: Promise<void> | undefined;
    const flush = () => {
      attempt ??= record()
        .then(() => {
          unrecorded.delete(key);
        })
        .finally(() => {
          attempt = undefined;
        });
      return attempt;
    };
    const retry = () => {
      if (unrecorded.get(key) !== flush) return;
      if (Date.now() > giveUpAt) {
        unrecorded.delete(key);
        return;
      }
      flush().catch(() => setTimeout(retry, RECORD_RETRY_MS).unref());
    };
    unrecorded.set(key, flush);
    setTimeout(retry, RECORD_RETRY_MS).unref();
  }

  return {
    /**
     * Whether this request runs, or the answer it gets back instead. The same key with another request
     * (another body, path or query) is a 409; so is one whose first run has not answered yet.
     */
    async begin(ref: KeyRef, fingerprint: string): Promise<Begin> {
      pruneNowAndThen();
      // This process answered the key's last run but could not record it yet: record it first.
      await unrecorded.get(mapKey(ref))?.();
      const runToken = randomUUID();
      for (let attempt = 0; attempt < 2; attempt += 1) {
        let claimed: boolean;
        try {
          claimed = await keys.claim(ref, fingerprint, LEASE_SECONDS, IDEMPOTENCY_TTL_SECONDS, runToken);
        } catch (error) {
          // The claim may have committed with its answer lost (Postgres went away in between): this run
          // never ran, so the key is given back as soon as Postgres answers, before this key's next run here.
          recordLater(ref, () => keys.release(ref, runToken));
          throw error;
        }
        if (claimed) return { run: true, runToken };
        const row = await keys.find(ref);
        // Gone between the two statements (pruned): claim it afresh.
        if (!row) continue;
        if (row.fingerprint !== fingerprint) {
          throw AppError.conflict('This Idempotency-Key was already used with a different request; use a new key for a new request', 'headers.idempotency-key');
        }
        if (row.state === 'done' && row.response_status !== null) return { run: false, status: row.response_status, body: row.response_body };
        throw AppError.conflict('A request with this Idempotency-Key is still in progress; retry after it answers');
      }
      throw AppError.conflict('A request with this Idempotency-Key is still in progress; retry after it answers');
    },

    /** Answers an older version kept in the clear, sealed: run once as a worker starts. */
    async sealPlainAnswers(): Promise<number> {
      return keys.sealPlainAnswers();
    },

    /** Records a run's answer; one that cannot be recorded now (Postgres away) is recorded as soon as it can be. */
    async finish(ref: KeyRef, fingerprint: string, runToken: string, status: number, body: unknown): Promise<void> {
      const record = () => keys.finish(ref, fingerprint, runToken, { status, body, final: isFinalAnswer(status) });
      try {
        await record();
      } catch (error) {
        recordLater(ref, record);
        throw error;
      }
    },
  };
}

export type IdempotencyService = ReturnType<typeof createIdempotencyService>;
