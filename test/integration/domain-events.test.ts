import type { Knex } from 'knex';
import { createDb, migrateLatest } from '../../src/db/knex';
import { domainEvent } from '../../src/domain/events';
import { recordEvent, recordEvents, type OutboxEvent } from '../../src/events/outbox';
import { relayOnce, type EventSubscriber } from '../../src/events/relay';
import { sample } from '../support/prometheus-text';
import { adminQuery } from './support/admin-query';
import { bearer, createTenant, startTestApi, type TestApi } from './support/harness';

/**
 * Domain events: written in the change's transaction, handed by the outbox relay to every subscriber once,
 * in order; a subscriber that fails sends the whole batch round again. The relay's own steps run against a
 * database of this file's own, so that no other worker's relay takes the events first; the suite's worker
 * shows the metrics subscriber at work on a real change.
 */
const adminUrl = process.env.TEST_DATABASE_ADMIN_URL!;
const databaseName = `${process.env.TEST_DATABASE_NAME}_events`;
let db: Knex;

beforeAll(async () => {
  await adminQuery(`CREATE DATABASE ${databaseName}`);
  const url = new URL(adminUrl);
  url.pathname = `/${databaseName}`;
  db = createDb(url.toString(), 3);
  await migrateLatest(db);
  await db('organisations').insert({ id: 'org_events', name: 'Events' });
});

afterAll(async () => {
  await db?.destroy();
  await adminQuery(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
});

/** A subscriber that writes down what it was handed, and what was committed. */
function probe(name: string, fail?: () => boolean): EventSubscriber & { handled: string[][]; committedIds: string[][] } {
  const handled: string[][] = [];
  const committedIds: string[][] = [];
  return {
    name,
    handled,
    committedIds,
    handle: async (_trx, events: readonly OutboxEvent[]) => {
      handled.push(events.map((event) => event.type));
      if (fail?.()) throw new Error(`${name} is down`);
    },
    committed: (events) => {
      committedIds.push(events.map((event) => event.id));
    },
  };
}

describe('the outbox relay', () => {
  it('when changes record events, then every subscriber is handed each committed one once, oldest first; a rolled-back change hands on nothing', async () => {
    const first = await recordEvent(db, 'org_events', domainEvent('payment.created', { id: 'pay_1' }), new Date('2026-01-01T00:00:00Z'));
    await expect(
      db.transaction(async (trx) => {
        await recordEvent(trx, 'org_events', domainEvent('payment.created', { id: 'pay_rolled_back' }));
        throw new Error('the change fails');
      }),
    ).rejects.toThrow('the change fails');
    await recordEvents(db, 'org_events', 'invoice.created', [{ id: 'inv_1', reason: 'manual' }, { id: 'inv_2', reason: 'manual' }], new Date('2026-01-01T00:00:01Z'));
    const webhooks = probe('webhooks');
    const metrics = probe('metrics');

    expect(await relayOnce({ db, subscribers: [webhooks, metrics] }, 2)).toBe(2);
    expect(await relayOnce({ db, subscribers: [webhooks, metrics] }, 2)).toBe(1);
    expect(await relayOnce({ db, subscribers: [webhooks, metrics] }, 2)).toBe(0);

    for (const subscriber of [webhooks, metrics]) {
      expect(subscriber.handled).toEqual([['payment.created', 'invoice.created'], ['invoice.created']]);
      expect(subscriber.committedIds.flat()[0]).toBe(first);
      expect(subscriber.committedIds.flat()).toHaveLength(3);
    }
    const rows = await db<OutboxEvent>('webhook_events').orderBy('created_at').select('type', 'payload', 'dispatched_at');
    expect(rows.map((row) => [row.type, (row.payload.data as { id: string }).id, row.dispatched_at !== null])).toEqual([
      ['payment.created', 'pay_1', true],
      ['invoice.created', expect.stringMatching(/^inv_[12]$/), true],
      ['invoice.created', expect.stringMatching(/^inv_[12]$/), true],
    ]);
  });

  it('when a subscriber fails, then nothing of the batch is marked or committed, and the next step hands the same events to every subscriber again', async () => {
    const id = await recordEvent(db, 'org_events', domainEvent('credits.granted', { id: 'cre_1', customerId: 'cus_1' }));
    let down = true;
    const webhooks = probe('webhooks', () => down);
    const metrics = probe('metrics');

    await expect(relayOnce({ db, subscribers: [metrics, webhooks] }, 10)).rejects.toThrow('webhooks is down');
    expect(metrics.committedIds).toEqual([]);
    expect(await db('webhook_events').where({ id }).first('dispatched_at')).toEqual({ dispatched_at: null });

    down = false;
    expect(await relayOnce({ db, subscribers: [metrics, webhooks] }, 10)).toBe(1);
    expect(metrics.handled).toEqual([['credits.granted'], ['credits.granted']]);
    expect(webhooks.handled).toEqual([['credits.granted'], ['credits.granted']]);
    expect(metrics.committedIds).toEqual([[id]]);
  });

  it('when a subscriber meets an error no retry mends on one event, then that event alone is set aside with its error, and the events before and after it go on', async () => {
    const at = Date.parse('2026-01-02T00:00:00Z');
    const ids = [];
    for (const [index, customerId] of ['cus_ok_1', 'cus_poison', 'cus_ok_2'].entries()) ids.push(await recordEvent(db, 'org_events', domainEvent('credits.granted', { id: `cre_${index}`, customerId }), new Date(at + index * 1000)));
    const handled: string[] = [];
    const picky: EventSubscriber = {
      name: 'picky',
      handle: async (_trx, events) => {
        for (const event of events) {
          if ((event.payload.data as { customerId: string }).customerId === 'cus_poison') throw new TypeError('cannot read this one');
        }
        handled.push(...events.map((event) => event.id));
      },
    };
    const metrics = probe('metrics');
    // The batch of three fails; one at a time, the first goes, the second is set aside, and the step ends there.
    expect(await relayOnce({ db, subscribers: [picky, metrics] }, 10)).toBe(2);
    expect(await relayOnce({ db, subscribers: [picky, metrics] }, 10)).toBe(1);
    expect(handled).toEqual([ids[0], ids[2]]);
    const rows = await db('webhook_events').whereIn('id', ids).orderBy('created_at').select('id', 'dispatched_at', 'dispatch_error');
    expect(rows.map((row: { dispatched_at: Date | null; dispatch_error: string | null }) => [row.dispatched_at !== null, row.dispatch_error])).toEqual([
      [true, null],
      [true, 'cannot read this one'],
      [true, null],
    ]);
    expect(metrics.committedIds.flat()).toEqual([ids[0], ids[2]]);
  });

  it('when usage events gather, then they wait while the oldest is young, and go together once it is old enough; other events go at once', async () => {
    const gathering = { types: ['usage.ingested'], ms: 60_000 };
    const usage = (id: string) => ({ batchId: 'bat_gathering', chunkIndex: 0, events: 1, customerIds: [id], metrics: ['calls'], from: '2026-01-01T00:00:00Z', to: '2026-01-01T00:00:00Z' });
    await recordEvents(db, 'org_events', 'usage.ingested', [usage('cus_young_1'), usage('cus_young_2')]);
    await recordEvent(db, 'org_events', domainEvent('payment.created', { id: 'pay_gathering' }));
    const reactions = probe('reactions');

    expect(await relayOnce({ db, subscribers: [reactions], gathering }, 10)).toBe(1);
    expect(reactions.handled).toEqual([['payment.created']]);
    expect(await relayOnce({ db, subscribers: [reactions], gathering }, 10)).toBe(0);

    // One that has waited a minute and more takes the young ones with it, in one step.
    await recordEvent(db, 'org_events', domainEvent('usage.ingested', usage('cus_old')), new Date(Date.now() - 61_000));
    expect(await relayOnce({ db, subscribers: [reactions], gathering }, 10)).toBe(3);
    expect(reactions.handled).toEqual([['payment.created'], ['usage.ingested', 'usage.ingested', 'usage.ingested']]);
  });
});


describe('the metrics subscriber, in the suite’s worker', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(async () => {
    await api?.close();
  });

  it('when a change commits, then the worker counts its event by type once the relay has handed it on', async () => {
    const url = process.env.TEST_WORKER_METRICS_URL!;
    const count = async () => sample(await (await fetch(url)).text(), 'billing_domain_events_relayed_total', { type: 'credits.granted' }) ?? 0;
    const tenant = await createTenant(api, 'domain-events');
    const customer = await api.http().post('/customers').set(bearer(tenant.systemToken)).send({ name: 'Counted', currency: 'USD' }).expect(201);
    const before = await count();
    await api.http().post(`/customers/${customer.body.data.id}/credits`).set(bearer(tenant.systemToken)).send({ kind: 'grant', amount: '5', currency: 'USD', reason: 'Counted' }).expect(201);
    const deadline = Date.now() + 20_000;
    while ((await count()) < before + 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await count()).toBeGreaterThanOrEqual(before + 1);
  });
});
