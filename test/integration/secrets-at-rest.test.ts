import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { createIdempotencyService } from '../../src/modules/idempotency/idempotency.service';
import { createSecretBox } from '../../src/security/secret-box';
import { createServices, serviceDepsFrom } from '../../src/services';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

/**
 * No plain secret anywhere in the database (docs/security.md, "Secrets"): client secrets are hashes,
 * webhook signing secrets and the answers kept for idempotent replay are sealed with SECRETS_KEY.
 */
let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'secrets-at-rest');
});
afterAll(() => api.close());

const admin = () => bearer(tenant.adminToken);

/** Every text and JSON column of every table of the suite's database. */
const textColumns = (db: Knex = api.db) =>
  db('information_schema.columns')
    .where({ table_schema: 'public' })
    .whereIn('data_type', ['text', 'character varying', 'jsonb', 'json'])
    .select<Array<{ table_name: string; column_name: string }>>('table_name', 'column_name');

/** The columns that hold `needle` in some row. */
async function whereStored(needle: string): Promise<string[]> {
  const found: string[] = [];
  for (const { table_name: table, column_name: column } of await textColumns()) {
    const hit = await api.db(table).whereRaw('position(? in ??::text) > 0', [needle, column]).first(api.db.raw('1 as hit'));
    if (hit) found.push(`${table}.${column}`);
  }
  return found;
}

/** Every secret-looking value in the database (as `db` sees it): client and webhook secrets the suite issued, whoever issued them. */
async function plainSecretsAnywhere(db: Knex = api.db): Promise<string[]> {
  const found: string[] = [];
  for (const { table_name: table, column_name: column } of await textColumns(db)) {
    // Sealed values are left out first: their base64url ciphertext can hold "cs_" and 40 more characters by chance.
    const hit = await db(table).whereRaw(`regexp_replace(??::text, 'sb1:[A-Za-z0-9:_-]*', '', 'g') ~ '(whsec_[A-Za-z0-9+/]{20}|cs_[A-Za-z0-9_-]{40})'`, [column]).first(api.db.raw('1 as hit'));
    if (hit) found.push(`${table}.${column}`);
  }
  return found;
}

it('when secrets are issued with an Idempotency-Key, then a replay gives them back, and no table holds one in plain text', async () => {
  const key = `secrets-${randomUUID()}`;
  const app = await api.http().post('/users/system').set(admin()).set('Idempotency-Key', key).send({}).expect(201);
  const clientSecret = app.body.data.clientSecret as string;
  const replay = await api.http().post('/users/system').set(admin()).set('Idempotency-Key', key).send({}).expect(201);
  expect(replay.body.data.clientSecret).toBe(clientSecret);

  const endpoint = await api
    .http()
    .post('/webhooks/endpoints')
    .set(admin())
    .set('Idempotency-Key', `${key}-endpoint`)
    .send({ url: 'https://hooks.example.com/billing', eventTypes: ['invoice.raised'] })
    .expect(201);
  const signing = endpoint.body.data.secret as string;
  const rotated = await api.http().post(`/webhooks/endpoints/${endpoint.body.data.id}/rotate-secret`).set(admin()).set('Idempotency-Key', `${key}-rotate`).send({}).expect(200);
  const newSigning = rotated.body.data.secret as string;
  expect(newSigning).not.toBe(signing);

  for (const secret of [clientSecret, signing, newSigning]) expect([secret.slice(0, 6), await whereStored(secret)]).toEqual([secret.slice(0, 6), []]);
  expect(await plainSecretsAnywhere()).toEqual([]);
});

it('when an older version left a signing secret and an answer in the clear, then a worker start seals them, and signing still works', async () => {
  const plain = `whsec_${Buffer.from(randomUUID()).toString('base64').slice(0, 32)}`;
  const answer = { status: 'success', message: 'Success', data: { clientSecret: `cs_${'x'.repeat(43)}` } };
  // Written and looked for in one transaction: a worker another test file starts meanwhile seals whatever
  // it sees, and it sees these rows only once they are committed, after the search has found them.
  const endpoint = await api.db.transaction(async (trx) => {
    const [row] = await trx('webhook_endpoints')
      .insert({ id: `whe_${randomUUID().replace(/-/g, '')}`, organisation_id: tenant.organisationId, url: 'https://hooks.example.com/legacy', event_types: JSON.stringify(['invoice.raised']), enabled: true, secret: plain })
      .returning('id');
    await trx('idempotency_keys').insert({ organisation_id: tenant.organisationId, route: 'POST /legacy', key: randomUUID(), fingerprint: 'f', state: 'done', response_status: 201, response_body: JSON.stringify(answer) });
    expect((await plainSecretsAnywhere(trx)).sort()).toEqual(['idempotency_keys.response_body', 'webhook_endpoints.secret']);
    return row;
  });

  // What a worker does when it starts. Another test file may start a worker of its own meanwhile, which
  // seals them first: so the end state is checked, not how many rows this call sealed.
  const deps = serviceDepsFrom(api.config, api.db);
  await createServices(deps).webhooks.sealPlainSecrets();
  await createIdempotencyService(api.db, deps.secrets).sealPlainAnswers();
  expect(await plainSecretsAnywhere()).toEqual([]);
  const stored = await api.db('webhook_endpoints').where({ id: endpoint.id }).first('secret');
  expect(createSecretBox(api.config.SECRETS_KEY!).open(stored.secret)).toBe(plain);
});

it('when the secrets key rotates, then what the previous key sealed still opens, and a key not configured is refused with its id', () => {
  const before = createSecretBox('a'.repeat(40));
  const sealed = before.seal('whsec_secret');
  expect(sealed).toMatch(/^sb1:[0-9a-f]{8}:/);
  const after = createSecretBox('b'.repeat(40), ['a'.repeat(40)]);
  expect(after.open(sealed)).toBe('whsec_secret');
  expect(after.seal('x').split(':')[1]).not.toBe(sealed.split(':')[1]);
  expect(() => createSecretBox('c'.repeat(40)).open(sealed)).toThrow(/sealed with key [0-9a-f]{8} cannot be opened/);
});
