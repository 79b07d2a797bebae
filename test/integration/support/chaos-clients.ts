import { randomUUID } from 'node:crypto';
import { usageEvent } from './fixtures';

/** One HTTP answer as a client saw it: `status` 0 when none came before the client's own timeout. */
export interface Answer {
  client: number;
  method: 'POST' | 'GET';
  key: string;
  attempt: number;
  status: number;
  ms: number;
  /** Date.now() when the request was sent. */
  sentAt: number;
  /** For an error answer: its first error item's path (`temporal`, `postgres`) and message, for the report. */
  errorPath?: string;
  error?: string;
}

/** A batch a client sent and what it last heard of it. */
export interface SentBatch {
  client: number;
  key: string;
  eventIds: string[];
  /** 200: ingested within the request; 202: accepted, its outcome to be read; other: the request's last answer. */
  status: number;
  batchId?: string;
  summary?: { success: number; failed: number; total: number; duplicates: number };
}

export interface ClientLoad {
  answers: Answer[];
  batches: SentBatch[];
  /** Sends no new batch; each client finishes (retries) the one it is on until `giveUpAfterMs` from now. */
  stop: (giveUpAfterMs: number) => Promise<void>;
  /** Ends everything at once, for a teardown. */
  abort: () => void;
  /** Aborted by `abort`. */
  signal: AbortSignal;
}

export interface ClientOptions {
  url: string;
  token: string;
  entityId: string;
  clients: number;
  minEvents: number;
  maxEvents: number;
  /** The pause before a 503 is sent again, with the same key and body. */
  retryPauseMs: number;
  /** The client's own limit on one request, so that a hung request is recorded instead of hanging the test. */
  requestTimeoutMs: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Clients that post usage batches back to back, each batch under its own Idempotency-Key with eventIds
 * of its own, retrying a 503 with the same key and body until it is answered 200 or 202. Every answer is
 * recorded with its status and duration.
 */
export function startClients(options: ClientOptions): ClientLoad {
  const answers: Answer[] = [];
  const batches: SentBatch[] = [];
  const aborter = new AbortController();
  let stopping = false;
  let giveUpAt = Number.POSITIVE_INFINITY;

  async function post(client: number, key: string, attempt: number, body: string): Promise<{ status: number; data?: Record<string, unknown> }> {
    const sentAt = Date.now();
    const started = performance.now();
    try {
      const res = await fetch(`${options.url}/events/batch`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${options.token}`, 'Idempotency-Key': key },
        body,
        signal: AbortSignal.any([aborter.signal, AbortSignal.timeout(options.requestTimeoutMs)]),
      });
      const json = (await res.json()) as { data?: Record<string, unknown>; errors?: Array<{ path?: string; message?: string }> };
      const problem = json.errors?.[0];
      answers.push({ client, method: 'POST', key, attempt, status: res.status, ms: performance.now() - started, sentAt, errorPath: problem?.path, error: problem?.message });
      return { status: res.status, data: json.data };
    } catch {
      answers.push({ client, method: 'POST', key, attempt, status: 0, ms: performance.now() - started, sentAt });
      return { status: 0 };
    }
  }

  async function sendOne(client: number): Promise<void> {
    const key = `chaos-${client}-${randomUUID()}`;
    const count = options.minEvents + Math.floor(Math.random() * (options.maxEvents - options.minEvents + 1));
    const eventIds = Array.from({ length: count }, (_, i) => `${key}-${i}`);
    const body = JSON.stringify({ events: eventIds.map((eventId, i) => usageEvent(options.entityId, { eventId, value: i + 1 })) });
    const batch: SentBatch = { client, key, eventIds, status: 0 };
    batches.push(batch);
    for (let attempt = 1; ; attempt += 1) {
      const { status, data } = await post(client, key, attempt, body);
      batch.status = status;
      if (status === 200) {
        batch.batchId = data!.batchId as string;
        batch.summary = data!.summary as SentBatch['summary'];
        return;
      }
      if (status === 202) {
        batch.batchId = data!.id as string;
        return;
      }
      // Anything but a 503 is not to be retried; the test judges it.
      if (status !== 503 || aborter.signal.aborted || Date.now() > giveUpAt) return;
      await sleep(options.retryPauseMs);
    }
  }

  async function run(client: number): Promise<void> {
    while (!stopping && !aborter.signal.aborted) await sendOne(client);
  }

  const running = Promise.all(Array.from({ length: options.clients }, (_, client) => run(client)));
  return {
    answers,
    batches,
    stop: async (giveUpAfterMs) => {
      stopping = true;
      giveUpAt = Date.now() + giveUpAfterMs;
      await running;
    },
    abort: () => {
      stopping = true;
      aborter.abort();
    },
    signal: aborter.signal,
  };
}

/** Reads a batch every second until it is no longer `processing`, recording every answer; the last record read. */
export async function pollBatch(
  options: Pick<ClientOptions, 'url' | 'token' | 'requestTimeoutMs'>,
  batch: SentBatch,
  answers: Answer[],
  deadline: number,
  signal: AbortSignal,
): Promise<Record<string, unknown> | undefined> {
  let last: Record<string, unknown> | undefined;
  for (let attempt = 1; Date.now() < deadline && !signal.aborted; attempt += 1) {
    const sentAt = Date.now();
    const started = performance.now();
    try {
      const res = await fetch(`${options.url}/events/batches/${batch.batchId}`, {
        headers: { Authorization: `Bearer ${options.token}` },
        signal: AbortSignal.any([signal, AbortSignal.timeout(options.requestTimeoutMs)]),
      });
      const json = (await res.json()) as { data?: Record<string, unknown> };
      answers.push({ client: batch.client, method: 'GET', key: batch.key, attempt, status: res.status, ms: performance.now() - started, sentAt });
      if (res.status === 200) {
        last = json.data;
        if (last?.status !== 'processing') return last;
      }
    } catch {
      answers.push({ client: batch.client, method: 'GET', key: batch.key, attempt, status: 0, ms: performance.now() - started, sentAt });
    }
    await sleep(1_000);
  }
  return last;
}

/** Counts by status and the slowest answer, for the test's report and its failure messages. */
export function describeAnswers(answers: Answer[]): string {
  const byStatus = new Map<string, { n: number; maxMs: number }>();
  for (const answer of answers) {
    const label = `${answer.method} ${answer.status}${answer.errorPath ? `/${answer.errorPath}` : ''}`;
    const entry = byStatus.get(label) ?? { n: 0, maxMs: 0 };
    entry.n += 1;
    entry.maxMs = Math.max(entry.maxMs, answer.ms);
    byStatus.set(label, entry);
  }
  const parts = [...byStatus.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([label, { n, maxMs }]) => `${label}: ${n} (max ${Math.round(maxMs)} ms)`);
  return parts.join(', ');
}
