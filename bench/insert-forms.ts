import { parseArgs } from 'node:util';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { Client as PgClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createDb, migrateLatest } from '../src/db/knex';
import { newId } from '../src/db/ids';
import type { UsageEvent } from '../src/domain/usage-event';
import { createUsageRepository } from '../src/modules/usage/usage.repository';
import { entitiesIn } from '../src/modules/customers';
import { percentile } from './stack';

/**
 * What a chunk's writes cost in Postgres, form against form, on a database of its own (migrated, 50
 * customer entities, nothing else running):
 *
 * - the insert of 1,000 events with their eventIds claimed, in three forms that write the same rows:
 *   `jsonb` (the events as one JSON array, `jsonb_to_recordset`: the form ingestion used before), `unnest`
 *   (one typed array per column: the repository's statement, the form ingestion uses) and `copy`
 *   (`COPY` into a temporary table, then the same claim and insert
 *   from it); each timed one chunk at a time (`--rounds`, after 20 warm-up chunks), then as throughput on
 *   `--connections` connections for `--seconds`;
 * - the claim check, per 1,000-event chunk and for a lone event: storing the batch with its chunk,
 *   reading the chunk back (locked, in the chunk's transaction) and replacing its events by the outcome,
 *   which is what a batch carried in the Update's payload instead would not write; and the bytes of a
 *   1,000-event chunk as JSON, which the payload would carry;
 * - the lookup of the chunk's customer entities, which a cache of known entities would save.
 *
 *   npx tsx bench/insert-forms.ts --rounds 200 --seconds 15 --connections 4 --forms jsonb,unnest,copy
 *
 * The forms run in the order `--forms` gives, each on the table the ones before it grew: run the reverse
 * order too before reading a difference of a few percent.
 */
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '15' },
    connections: { type: 'string', default: '4' },
    forms: { type: 'string', default: 'jsonb,unnest,copy' },
  },
});
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const CHUNK = 1000;
const ORG = 'org_insert_forms';

let sequence = 0;
function chunkOf(entityIds: string[]): UsageEvent[] {
  const batch = sequence++;
  return Array.from({ length: CHUNK }, (_, i) => ({
    customerEntityId: entityIds[i % entityIds.length]!,
    metric: i % 3 === 0 ? 'storage_gb' : 'api_calls',
    value: String((i % 17) + 0.5),
    timestamp: new Date(Date.UTC(2026, 10, 1) + ((batch * CHUNK + i) % 2_592_000) * 1000),
    metadata: { region: i % 2 ? 'eu-west-1' : 'us-east-1', requestId: `${batch}-${i}` },
    eventId: `form-${batch}-${i}`,
    jobId: null,
  }));
}

const sortedRows = (events: UsageEvent[]) => [...events].sort((a, b) => (a.eventId ?? '').localeCompare(b.eventId ?? '')).map((event) => ({ id: newId('evt'), ...event }));

/** The claim and the insert, reading the chunk's rows from `input`. */
const claimAndInsert = (input: string) => `
  claimed AS (
    INSERT INTO usage_event_keys (organisation_id, event_id, usage_event_id)
    SELECT $org, input.event_id, input.id FROM ${input} AS input WHERE input.event_id IS NOT NULL
    ON CONFLICT DO NOTHING RETURNING usage_event_id
  )
  INSERT INTO usage_events (id, organisation_id, customer_entity_id, metric, value, "timestamp", metadata, event_id, job_id, batch_id)
  SELECT input.id, $org, input.customer_entity_id, input.metric, input.value, input.ts, input.metadata, input.event_id, input.job_id, 'ubt_forms'
  FROM ${input} AS input WHERE input.event_id IS NULL OR input.id IN (SELECT usage_event_id FROM claimed)`;

type Form = (client: PgClient, db: Knex, events: UsageEvent[]) => Promise<void>;

const forms: Record<string, Form> = {
  async jsonb(client, _db, events) {
    const rows = sortedRows(events).map((row) => ({
      id: row.id,
      customer_entity_id: row.customerEntityId,
      metric: row.metric,
      value: row.value,
      ts: row.timestamp.toISOString(),
      metadata: row.metadata,
      event_id: row.eventId,
      job_id: row.jobId,
    }));
    await client.query('BEGIN');
    await client.query(
      `WITH input AS MATERIALIZED (
         SELECT * FROM jsonb_to_recordset($2::jsonb)
           AS t(id text, customer_entity_id text, metric text, value numeric, ts timestamptz, metadata jsonb, event_id text, job_id text)
       ), ${claimAndInsert('input').replaceAll('$org', '$1')}`,
      [ORG, JSON.stringify(rows)],
    );
    await client.query('COMMIT');
  },
  // The form ingestion uses: the repository's own statement.
  async unnest(_client, db, events) {
    await db.transaction((trx) => createUsageRepository(trx).insertEvents(ORG, 'ubt_forms', events));
  },
  async copy(client, _db, events) {
    const rows = sortedRows(events);
    const field = (value: string | null) => (value === null ? '\\N' : value.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r'));
    const text = rows
      .map((row) => [row.id, row.customerEntityId, row.metric, row.value, row.timestamp.toISOString(), JSON.stringify(row.metadata), row.eventId, row.jobId].map(field).join('\t'))
      .join('\n');
    await client.query('BEGIN');
    await client.query(
      'CREATE TEMP TABLE IF NOT EXISTS staged_events (id text, customer_entity_id text, metric text, value numeric, ts timestamptz, metadata jsonb, event_id text, job_id text) ON COMMIT DELETE ROWS',
    );
    await pipeline(Readable.from([`${text}\n`]), client.query(copyFrom('COPY staged_events FROM STDIN')));
    await client.query(`WITH ${claimAndInsert('staged_events').replaceAll('$org', '$1')}`, [ORG]);
    await client.query('COMMIT');
  },
};

const round1 = (value: number) => Math.round(value * 10) / 10;
const timing = (sorted: number[]) => ({ p50: round1(percentile(sorted, 50)), p90: round1(percentile(sorted, 90)), p99: round1(percentile(sorted, 99)) });

async function main(): Promise<void> {
  const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `bench_insert_forms_${Date.now()}`;
  const admin = new PgClient({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  const db = createDb(databaseUrl, connections + 2);
  const clients: PgClient[] = [];
  try {
    await migrateLatest(db);
    await db('organisations').insert({ id: ORG, name: 'Insert forms' });
    const entityIds: string[] = [];
    for (let i = 0; i < 50; i += 1) {
      const customerId = newId('cus');
      const entityId = newId('ent');
      await db('customers').insert({ id: customerId, organisation_id: ORG, name: `Customer ${i}` });
      await db('entities').insert({ id: entityId, organisation_id: ORG, type: 'customer', name: `Entity ${i}`, customer_id: customerId });
      entityIds.push(entityId);
    }
    for (let i = 0; i < connections; i += 1) {
      const client = new PgClient({ connectionString: databaseUrl });
      await client.connect();
      clients.push(client);
    }

    const perChunk: Record<string, ReturnType<typeof timing>> = {};
    const throughput: Record<string, number> = {};
    for (const label of values.forms.split(',')) {
      const form = forms[label];
      if (!form) throw new Error(`--forms names ${label}; the forms are ${Object.keys(forms).join(', ')}`);
      for (let i = 0; i < 20; i += 1) await form(clients[0]!, db, chunkOf(entityIds));
      const times: number[] = [];
      for (let i = 0; i < rounds; i += 1) {
        const events = chunkOf(entityIds);
        const started = performance.now();
        await form(clients[0]!, db, events);
        times.push(performance.now() - started);
      }
      perChunk[label] = timing(times.sort((a, b) => a - b));
      let rows = 0;
      const began = performance.now();
      const until = began + seconds * 1000;
      await Promise.all(
        clients.map(async (client) => {
          while (performance.now() < until) {
            await form(client, db, chunkOf(entityIds));
            rows += CHUNK;
          }
        }),
      );
      throughput[label] = Math.round(rows / ((performance.now() - began) / 1000));
      await db.raw('VACUUM ANALYZE usage_events, usage_event_keys');
    }

    // The claim check of one batch (a 1,000-event chunk, and a lone event), step by step; and the lookup.
    const usage = createUsageRepository(db);
    const lookup: number[] = [];
    const claimCheck = async (size: number) => {
      const steps = { store: [] as number[], readBackLocked: [] as number[], clearWithOutcome: [] as number[] };
      for (let i = 0; i < rounds + 20; i += 1) {
        const raw = chunkOf(entityIds)
          .slice(0, size)
          .map((event) => ({ CustomerEntityId: event.customerEntityId, metric: event.metric, value: event.value, timestamp: event.timestamp.toISOString(), metadata: event.metadata, eventId: event.eventId }));
        let started = performance.now();
        const batch = await usage.createBatch(ORG, raw);
        const stored = performance.now() - started;
        started = performance.now();
        await db.transaction(async (trx) => {
          await createUsageRepository(trx).lockChunk(ORG, batch.id, 0);
        });
        const read = performance.now() - started;
        started = performance.now();
        await usage.storeChunkOutcome(batch.id, 0, { success: size, failed: 0, duplicates: 0, failedRecords: [], duplicateEvents: [] });
        const cleared = performance.now() - started;
        started = performance.now();
        await entitiesIn(db).liveCustomerEntities(ORG, entityIds);
        const looked = performance.now() - started;
        if (i >= 20) {
          steps.store.push(stored);
          steps.readBackLocked.push(read);
          steps.clearWithOutcome.push(cleared);
          if (size === CHUNK) lookup.push(looked);
        }
      }
      return Object.fromEntries(Object.entries(steps).map(([step, times]) => [step, timing(times.sort((a, b) => a - b))]));
    };
    const claimCheckPerChunk = await claimCheck(CHUNK);
    const claimCheckPerLoneEvent = await claimCheck(1);
    const payloadBytes = Buffer.byteLength(JSON.stringify(chunkOf(entityIds).map((event) => ({ CustomerEntityId: event.customerEntityId, metric: event.metric, value: event.value, timestamp: event.timestamp.toISOString(), metadata: event.metadata, eventId: event.eventId }))));

    // The column the claim check keeps its raw events in: the same 1,000-event chunk written, read back
    // locked and cleared, in a scratch table per kind of column.
    const chunkJson = JSON.stringify(chunkOf(entityIds).map((event) => ({ CustomerEntityId: event.customerEntityId, metric: event.metric, value: event.value, timestamp: event.timestamp.toISOString(), metadata: event.metadata, eventId: event.eventId })));
    const columnKinds: Record<string, string[]> = {
      jsonb: ['events jsonb'],
      'jsonb, lz4': ['events jsonb COMPRESSION lz4'],
      json: ['events json'],
      'json, external (raw_events)': ['events json', 'ALTER TABLE bench_claim_check ALTER COLUMN events SET STORAGE EXTERNAL'],
    };
    const claimCheckColumns: Record<string, { write: number; readBackLocked: number; clear: number; total: number }> = {};
    const client = clients[0]!;
    for (const [kind, [column, ...alterations]] of Object.entries(columnKinds)) {
      await client.query('DROP TABLE IF EXISTS bench_claim_check');
      await client.query(`CREATE TABLE bench_claim_check (id serial PRIMARY KEY, ${column})`);
      for (const alteration of alterations) await client.query(alteration);
      const steps = { write: [] as number[], readBackLocked: [] as number[], clear: [] as number[] };
      for (let i = 0; i < rounds + 20; i += 1) {
        let started = performance.now();
        const { rows } = await client.query<{ id: number }>('INSERT INTO bench_claim_check (events) VALUES ($1) RETURNING id', [chunkJson]);
        const written = performance.now() - started;
        started = performance.now();
        await client.query('BEGIN');
        await client.query('SELECT events FROM bench_claim_check WHERE id = $1 FOR UPDATE', [rows[0]!.id]);
        await client.query('COMMIT');
        const read = performance.now() - started;
        started = performance.now();
        await client.query('UPDATE bench_claim_check SET events = NULL WHERE id = $1', [rows[0]!.id]);
        const cleared = performance.now() - started;
        if (i >= 20) {
          steps.write.push(written);
          steps.readBackLocked.push(read);
          steps.clear.push(cleared);
        }
      }
      const median = (times: number[]) => percentile([...times].sort((a, b) => a - b), 50);
      claimCheckColumns[kind] = {
        write: round1(median(steps.write)),
        readBackLocked: round1(median(steps.readBackLocked)),
        clear: round1(median(steps.clear)),
        total: round1(median(steps.write) + median(steps.readBackLocked) + median(steps.clear)),
      };
    }
    await client.query('DROP TABLE bench_claim_check');

    process.stdout.write(
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          settings: { rounds, seconds, connections, chunk: CHUNK, forms: values.forms },
          insertMsPerChunk: perChunk,
          insertRowsPerSecond: throughput,
          claimCheckMsPerChunk: claimCheckPerChunk,
          claimCheckMsPerLoneEvent: claimCheckPerLoneEvent,
          // What a 1,000-event chunk would weigh in Temporal's payloads instead.
          chunkJsonBytes: payloadBytes,
          claimCheckMsPerChunkByColumn: claimCheckColumns,
          entityLookupMsPerChunk: timing(lookup.sort((a, b) => a - b)),
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    for (const client of clients) await client.end();
    await db.destroy();
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.end();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
