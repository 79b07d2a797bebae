import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  [tenant, other] = await Promise.all([createTenant(api, 'reference'), createTenant(api, 'reference-other')]);
});
afterAll(() => api.close());

const FORBIDDEN = { status: 'error', message: 'Forbidden', errors: [] };
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const unique = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

function as(who: Tenant, token: 'system' | 'admin' = 'system') {
  const auth = bearer(token === 'system' ? who.systemToken : who.adminToken);
  return {
    get: (path: string) => api.http().get(path).set(auth),
    post: (path: string, body: object) => api.http().post(path).set(auth).send(body),
    patch: (path: string, body: object) => api.http().patch(path).set(auth).send(body),
    delete: (path: string) => api.http().delete(path).set(auth),
  };
}

async function createCustomer(who: Tenant, body: object = {}) {
  const res = await as(who).post('/customers', { name: unique('customer'), ...body }).expect(201);
  return res.body.data as { id: string; name: string; externalId: string | null };
}

async function createEntity(who: Tenant, body: object) {
  const res = await as(who).post('/entities', { name: unique('entity'), ...body }).expect(201);
  return res.body.data as { id: string; identifier: string | null; addresses: Array<{ id: string }> };
}

const address = { line1: '1 Main Street', city: 'Berlin', postalCode: '10115', country: 'DE' };

describe('customers', () => {
  it('when an Admin changes a customer, then the fields given are set, null clears one, the rest stay; SystemUser may not', async () => {
    const customer = await createCustomer(tenant, { email: 'a@acme.test', paymentTermsDays: 14 });
    const changed = await as(tenant, 'admin').patch(`/customers/${customer.id}`, { locale: 'en-GB', timezone: 'Europe/London', email: null }).expect(200);
    expect(changed.body.data).toMatchObject({ id: customer.id, name: customer.name, email: null, paymentTermsDays: 14, locale: 'en-GB', timezone: 'Europe/London' });
    expect((await as(tenant).get(`/customers/${customer.id}`).expect(200)).body.data).toEqual(changed.body.data);
    expect((await as(tenant).patch(`/customers/${customer.id}`, { locale: 'de-DE' })).body).toEqual(FORBIDDEN);
  });

  it('when a change is empty, names an unknown zone, takes an externalId another customer holds or the customer of another organisation, then it is refused and nothing changes', async () => {
    const holder = await createCustomer(tenant, { externalId: unique('ext') });
    const customer = await createCustomer(tenant);
    const admin = as(tenant, 'admin');
    expect((await admin.patch(`/customers/${customer.id}`, {}).expect(400)).body.errors[0].message).toMatch(/at least one of name/);
    expect((await admin.patch(`/customers/${customer.id}`, { timezone: 'Mars/Olympus' }).expect(400)).body.errors[0].path).toBe('body.timezone');
    expect((await admin.patch(`/customers/${customer.id}`, { name: 'Renamed', currency: 'USD' }).expect(400)).body.errors).toEqual([expect.objectContaining({ path: 'body.currency' })]);
    await admin.patch(`/customers/${customer.id}`, { externalId: holder.externalId }).expect(409);
    await as(other, 'admin').patch(`/customers/${customer.id}`, { name: 'Taken' }).expect(404);
    expect((await as(tenant).get(`/customers/${customer.id}`).expect(200)).body.data).toMatchObject({ name: customer.name, externalId: null, timezone: null });
  });

  it('when a customer is created, then 201 with its fields in camelCase and it reads back by id', async () => {
    const externalId = unique('ext');
    const created = await as(tenant).post('/customers', { name: 'Acme GmbH', email: 'billing@acme.test', currency: 'EUR', externalId });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: 'success', message: 'Success' });
    expect(created.body.data).toEqual({
      id: expect.stringMatching(/^cus_/),
      name: 'Acme GmbH',
      email: 'billing@acme.test',
      currency: 'EUR',
      externalId,
      paymentTermsDays: null,
      locale: null,
      timezone: null,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const read = await as(tenant).get(`/customers/${created.body.data.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(created.body.data);
  });

  it('when only a name is given, then the optional fields are null', async () => {
    const created = await as(tenant).post('/customers', { name: 'Bare' }).expect(201);
    expect(created.body.data).toMatchObject({ email: null, currency: null, externalId: null });
  });

  it('when the externalId is already taken in the organisation, then 409; another organisation may use it', async () => {
    const externalId = unique('dup');
    await createCustomer(tenant, { externalId });
    const duplicate = await as(tenant).post('/customers', { name: 'Again', externalId });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toMatchObject({ status: 'error', errors: [{ code: 1003 }] });
    await as(other).post('/customers', { name: 'Elsewhere', externalId }).expect(201);
  });

  it('when the list is paged, then page, limit and total are right and pages do not overlap', async () => {
    const tag = unique('paged');
    for (let i = 0; i < 5; i += 1) await createCustomer(tenant, { name: `${tag} ${i}` });
    const pages = await Promise.all([1, 2, 3].map((page) => as(tenant).get(`/customers?search=${tag}&limit=2&page=${page}`)));
    expect(pages.map((res) => res.status)).toEqual([200, 200, 200]);
    expect(pages.map((res) => res.body.data.items.length)).toEqual([2, 2, 1]);
    for (const [index, res] of pages.entries()) expect(res.body.data).toMatchObject({ page: index + 1, limit: 2, total: 5 });
    const ids = pages.flatMap((res) => res.body.data.items.map((item: { id: string }) => item.id));
    expect(new Set(ids).size).toBe(5);
  });

  it('when no paging is given, then page 1 with the default limit of 20', async () => {
    const res = await as(tenant).get('/customers').expect(200);
    expect(res.body.data).toMatchObject({ page: 1, limit: 20, total: expect.any(Number) });
  });

  it('when search is given, then it matches name, email and externalId case-insensitively', async () => {
    const tag = unique('find');
    const byName = await createCustomer(tenant, { name: `${tag} name` });
    const byEmail = await createCustomer(tenant, { email: `${tag}@example.com` });
    const byExternalId = await createCustomer(tenant, { externalId: `${tag}-ext` });
    const res = await as(tenant).get(`/customers?search=${tag.toUpperCase()}`).expect(200);
    expect(res.body.data.items.map((item: { id: string }) => item.id).sort()).toEqual([byName.id, byEmail.id, byExternalId.id].sort());
    expect(res.body.data.total).toBe(3);
  });

  it('when the limit is above 100, then 400 on query.limit', async () => {
    const res = await as(tenant).get('/customers?limit=101');
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'query.limit' })]);
  });

  it('when the body is invalid, then 400 with one item per field', async () => {
    const res = await as(tenant).post('/customers', { email: 'not-an-email', currency: 'eur' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 'error', message: 'Validation failed' });
    const paths = res.body.errors.map((item: { path: string }) => item.path).sort();
    expect(paths).toEqual(['body.currency', 'body.email', 'body.name']);
    for (const item of res.body.errors) expect(item.code).toBe(1001);
  });

  it('when a SystemUser deletes a customer, then 403 Forbidden and the customer stays', async () => {
    const customer = await createCustomer(tenant);
    const res = await as(tenant).delete(`/customers/${customer.id}`);
    expect(res.status).toBe(403);
    expect(res.body).toEqual(FORBIDDEN);
    await as(tenant).get(`/customers/${customer.id}`).expect(200);
  });

  it('when an admin deletes a customer, then it and its entities vanish from reads and lists, and the row is kept', async () => {
    const externalId = unique('gone');
    const customer = await createCustomer(tenant, { externalId });
    const entity = await createEntity(tenant, { type: 'customer', customerId: customer.id });
    const res = await as(tenant, 'admin').delete(`/customers/${customer.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: customer.id, deleted: true });
    await as(tenant).get(`/customers/${customer.id}`).expect(404);
    await as(tenant).get(`/entities/${entity.id}`).expect(404);
    const list = await as(tenant).get(`/customers?search=${externalId}`).expect(200);
    expect(list.body.data).toMatchObject({ items: [], total: 0 });
    await as(tenant, 'admin').delete(`/customers/${customer.id}`).expect(404);
    const row = await api.db('customers').where({ id: customer.id }).first();
    expect(row.deleted_at).toBeInstanceOf(Date);
    // The externalId is free again once its customer is gone.
    await createCustomer(tenant, { externalId });
  });

  it('when the customer does not exist, then 404 with code 1002', async () => {
    const res = await as(tenant).get('/customers/cus_unknown');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ status: 'error', errors: [{ code: 1002 }] });
  });
});

describe('entities', () => {
  it('when a customer entity is created with an address, then both come back and read back by id', async () => {
    const customer = await createCustomer(tenant);
    const identifier = unique('ident');
    const created = await as(tenant).post('/entities', {
      type: 'customer',
      name: 'Acme Europe',
      customerId: customer.id,
      identifier,
      taxId: 'DE123456789',
      currency: 'EUR',
      address,
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({
      id: expect.stringMatching(/^ent_/),
      type: 'customer',
      name: 'Acme Europe',
      customerId: customer.id,
      identifier,
      taxId: 'DE123456789',
      currency: 'EUR',
      addresses: [
        {
          id: expect.stringMatching(/^adr_/),
          entityId: created.body.data.id,
          line1: '1 Main Street',
          line2: null,
          city: 'Berlin',
          state: null,
          postalCode: '10115',
          country: 'DE',
          createdAt: expect.stringMatching(ISO),
          updatedAt: expect.stringMatching(ISO),
        },
      ],
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const read = await as(tenant).get(`/entities/${created.body.data.id}`).expect(200);
    expect(read.body.data).toEqual(created.body.data);
  });

  it('when a seller entity is created, then it needs no customer', async () => {
    const created = await as(tenant).post('/entities', { type: 'seller', name: 'Our GmbH' });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ type: 'seller', customerId: null, identifier: null, addresses: [] });
  });

  it('when a customer entity lacks customerId, then 400 on body.customerId', async () => {
    const res = await as(tenant).post('/entities', { type: 'customer', name: 'Orphan' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'body.customerId' })]);
  });

  it('when the type is unknown, then 400 on body.type', async () => {
    const res = await as(tenant).post('/entities', { type: 'buyer', name: 'Nobody' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'body.type' })]);
  });

  it.each(['Germany', 'ZZ', 'de'])("when the address's country is %s, not an ISO 3166-1 alpha-2 code of a country, then 400 on body.address.country and nothing is written", async (country) => {
    const identifier = unique('bad-address');
    const res = await as(tenant).post('/entities', { type: 'seller', name: 'Bad', identifier, address: { ...address, country } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'body.address.country', message: expect.stringContaining('ISO 3166-1 alpha-2 code of a country') })]);
    expect(await api.db('entities').where({ identifier })).toHaveLength(0);
  });

  it('when the customer is unknown or deleted, then 404', async () => {
    await as(tenant).post('/entities', { type: 'customer', name: 'Ghost', customerId: 'cus_unknown' }).expect(404);
    const customer = await createCustomer(tenant);
    await as(tenant, 'admin').delete(`/customers/${customer.id}`).expect(200);
    const res = await as(tenant).post('/entities', { type: 'customer', name: 'Late', customerId: customer.id });
    expect(res.status).toBe(404);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1002 })]);
  });

  it('when the identifier is already taken in the organisation, then 409', async () => {
    const identifier = unique('taken');
    await createEntity(tenant, { type: 'seller', identifier });
    const res = await as(tenant).post('/entities', { type: 'seller', name: 'Second', identifier });
    expect(res.status).toBe(409);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1003 })]);
  });

  it('when entities are listed by type, then only that type comes back, paged and searchable', async () => {
    const tag = unique('typed');
    const customer = await createCustomer(tenant);
    const customerEntity = await createEntity(tenant, { type: 'customer', customerId: customer.id, name: `${tag} c` });
    const sellers = [await createEntity(tenant, { type: 'seller', name: `${tag} s1` }), await createEntity(tenant, { type: 'seller', identifier: `${tag}-s2` })];
    const onlySellers = await as(tenant).get(`/entities?type=seller&search=${tag}`).expect(200);
    expect(onlySellers.body.data).toMatchObject({ page: 1, limit: 20, total: 2 });
    expect(onlySellers.body.data.items.map((item: { id: string }) => item.id).sort()).toEqual(sellers.map((s) => s.id).sort());
    const onlyCustomers = await as(tenant).get(`/entities?type=customer&search=${tag}`).expect(200);
    expect(onlyCustomers.body.data.items).toEqual([expect.objectContaining({ id: customerEntity.id, type: 'customer', addresses: [] })]);
    const all = await as(tenant).get(`/entities?search=${tag}&limit=2&page=2`).expect(200);
    expect(all.body.data).toMatchObject({ page: 2, limit: 2, total: 3 });
    expect(all.body.data.items).toHaveLength(1);
  });

  it('when the type filter is unknown, then 400 on query.type', async () => {
    const res = await as(tenant).get('/entities?type=buyer');
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'query.type' })]);
  });

  it('when an entity is read by identifier, then it comes back with its addresses; an unknown identifier is 404; the deprecated path answers the same', async () => {
    const identifier = unique('by-ident');
    const entity = await createEntity(tenant, { type: 'seller', identifier, address });
    const res = await as(tenant).get('/entities/by-identifier').query({ identifier });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: entity.id, identifier, addresses: [expect.objectContaining({ city: 'Berlin' })] });
    await as(tenant).get('/entities/by-identifier').query({ identifier: unique('nothing') }).expect(404);
    // Sent with spaces around it, it was stored trimmed, and the same spaces find it.
    const spaced = await createEntity(tenant, { type: 'seller', identifier: `  ${unique('spaced')}  ` });
    expect((await as(tenant).get('/entities/by-identifier').query({ identifier: `  ${spaced.identifier!}  ` }).expect(200)).body.data.id).toBe(spaced.id);
    const blank = await as(tenant).post('/entities', { name: 'Blank', type: 'seller', identifier: '\u000b ' });
    expect([blank.status, blank.body.errors]).toEqual([400, [{ code: 1001, path: 'body.identifier', message: 'must not be empty or only spaces' }]]);
    const deprecated = await as(tenant).get(`/entities/by-identifier/${identifier}`).expect(200);
    expect(deprecated.body).toEqual(res.body);
    await as(tenant).get(`/entities/by-identifier/${unique('nothing')}`).expect(404);
    const missing = await as(tenant).get('/entities/by-identifier').expect(400);
    expect(missing.body.errors).toEqual([{ code: 1001, path: 'query.identifier', message: 'is required' }]);
    // An identifier of only spaces can name no entity: refused as on create, not looked up.
    const spaces = await as(tenant).get('/entities/by-identifier').query({ identifier: '  ' });
    expect([spaces.status, spaces.body.errors]).toEqual([400, [{ code: 1001, path: 'query.identifier', message: 'must not be empty or only spaces' }]]);
    const empty = await as(tenant).get('/entities/by-identifier?identifier=');
    expect([empty.status, empty.body.errors]).toEqual([400, [{ code: 1001, path: 'query.identifier', message: 'must not be empty' }]]);
    const spacesInPath = await as(tenant).get('/entities/by-identifier/%20%20');
    expect([spacesInPath.status, spacesInPath.body.errors]).toEqual([400, [{ code: 1001, path: 'params.identifier', message: 'must not be empty or only spaces' }]]);
  });

  it('when an entity is deleted, then it vanishes from reads, lookups and lists, and its identifier is free again', async () => {
    const identifier = unique('deleted');
    const entity = await createEntity(tenant, { type: 'seller', identifier });
    const res = await as(tenant).delete(`/entities/${entity.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: entity.id, deleted: true });
    await as(tenant).get(`/entities/${entity.id}`).expect(404);
    await as(tenant).get('/entities/by-identifier').query({ identifier }).expect(404);
    const list = await as(tenant).get(`/entities?search=${identifier}`).expect(200);
    expect(list.body.data.total).toBe(0);
    await as(tenant).delete(`/entities/${entity.id}`).expect(404);
    await createEntity(tenant, { type: 'seller', identifier });
  });
});

describe('addresses', () => {
  it('when an address is added and removed, then the entity shows it and then no longer does', async () => {
    const entity = await createEntity(tenant, { type: 'seller' });
    const created = await as(tenant).post(`/entities/${entity.id}/addresses`, {
      line1: '5 Rue de Rivoli',
      line2: 'Floor 3',
      city: 'Paris',
      state: 'IDF',
      postalCode: '75001',
      country: 'FR',
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ entityId: entity.id, line2: 'Floor 3', state: 'IDF', country: 'FR' });
    const withAddress = await as(tenant).get(`/entities/${entity.id}`).expect(200);
    expect(withAddress.body.data.addresses).toEqual([created.body.data]);

    const removed = await as(tenant).delete(`/entities/${entity.id}/addresses/${created.body.data.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body.data).toEqual({ id: created.body.data.id, deleted: true });
    const without = await as(tenant).get(`/entities/${entity.id}`).expect(200);
    expect(without.body.data.addresses).toEqual([]);
    await as(tenant).delete(`/entities/${entity.id}/addresses/${created.body.data.id}`).expect(404);
  });

  it('when the address belongs to another entity, then 404 and it stays', async () => {
    const owner = await createEntity(tenant, { type: 'seller', address });
    const stranger = await createEntity(tenant, { type: 'seller' });
    await as(tenant).delete(`/entities/${stranger.id}/addresses/${owner.addresses[0]!.id}`).expect(404);
    const read = await as(tenant).get(`/entities/${owner.id}`).expect(200);
    expect(read.body.data.addresses).toHaveLength(1);
  });

  it('when the entity is unknown or deleted, then 404', async () => {
    await as(tenant).post('/entities/ent_unknown/addresses', address).expect(404);
    const entity = await createEntity(tenant, { type: 'seller', address });
    await as(tenant).delete(`/entities/${entity.id}`).expect(200);
    await as(tenant).post(`/entities/${entity.id}/addresses`, address).expect(404);
    await as(tenant).delete(`/entities/${entity.id}/addresses/${entity.addresses[0]!.id}`).expect(404);
  });

  it('when the address is incomplete, then 400 for each missing or malformed field', async () => {
    const entity = await createEntity(tenant, { type: 'seller' });
    const res = await as(tenant).post(`/entities/${entity.id}/addresses`, { line1: 'Somewhere', country: 'de' });
    expect(res.status).toBe(400);
    const paths = res.body.errors.map((item: { path: string }) => item.path).sort();
    expect(paths).toEqual(['body.city', 'body.country']);
  });
});

describe('contact groups', () => {
  it('when a group is created, then it comes back with its contacts and reads back by id', async () => {
    const customer = await createCustomer(tenant);
    const created = await as(tenant).post('/contact-groups', {
      customerId: customer.id,
      name: 'Accounts payable',
      contacts: [
        { name: 'Zoe', email: 'zoe@acme.test' },
        { name: 'Adam', email: 'adam@acme.test' },
      ],
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({
      id: expect.stringMatching(/^cgr_/),
      customerId: customer.id,
      name: 'Accounts payable',
      contacts: [
        { id: expect.any(String), name: 'Adam', email: 'adam@acme.test', createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO) },
        { id: expect.any(String), name: 'Zoe', email: 'zoe@acme.test', createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO) },
      ],
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const read = await as(tenant).get(`/contact-groups/${created.body.data.id}`).expect(200);
    expect(read.body.data).toEqual(created.body.data);
  });

  it('when groups are listed for one customer, then only that customer\'s groups come back', async () => {
    const [mine, theirs] = [await createCustomer(tenant), await createCustomer(tenant)];
    const contacts = [{ name: 'Ann', email: 'ann@example.com' }];
    const first = await as(tenant).post('/contact-groups', { customerId: mine.id, name: 'Finance', contacts }).expect(201);
    const second = await as(tenant).post('/contact-groups', { customerId: mine.id, name: 'Legal', contacts }).expect(201);
    await as(tenant).post('/contact-groups', { customerId: theirs.id, name: 'Finance', contacts }).expect(201);
    const res = await as(tenant).get(`/contact-groups?customerId=${mine.id}`).expect(200);
    expect(res.body.data).toMatchObject({ page: 1, limit: 20, total: 2 });
    expect(res.body.data.items.map((item: { id: string }) => item.id).sort()).toEqual([first.body.data.id, second.body.data.id].sort());
    expect(res.body.data.items[0].contacts).toEqual([expect.objectContaining({ email: 'ann@example.com' })]);
    const searched = await as(tenant).get(`/contact-groups?customerId=${mine.id}&search=leg`).expect(200);
    expect(searched.body.data.items.map((item: { id: string }) => item.id)).toEqual([second.body.data.id]);
  });

  it('when a group is deleted, then its contacts are removed with it', async () => {
    const customer = await createCustomer(tenant);
    const created = await as(tenant)
      .post('/contact-groups', {
        customerId: customer.id,
        name: 'To go',
        contacts: [
          { name: 'One', email: 'one@example.com' },
          { name: 'Two', email: 'two@example.com' },
        ],
      })
      .expect(201);
    const groupId = created.body.data.id;
    expect(await api.db('contacts').where({ contact_group_id: groupId })).toHaveLength(2);
    const res = await as(tenant).delete(`/contact-groups/${groupId}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: groupId, deleted: true });
    expect(await api.db('contacts').where({ contact_group_id: groupId })).toHaveLength(0);
    await as(tenant).get(`/contact-groups/${groupId}`).expect(404);
    await as(tenant).delete(`/contact-groups/${groupId}`).expect(404);
  });

  it('when the group id is unknown, then delete answers 404', async () => {
    const res = await as(tenant).delete('/contact-groups/cgr_unknown');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ status: 'error', errors: [{ code: 1002 }] });
  });

  it('when the customer is unknown, then 404; when it is deleted, then its groups vanish', async () => {
    const contacts = [{ name: 'Ann', email: 'ann@example.com' }];
    await as(tenant).post('/contact-groups', { customerId: 'cus_unknown', name: 'Nobody', contacts }).expect(404);
    const customer = await createCustomer(tenant);
    const group = await as(tenant).post('/contact-groups', { customerId: customer.id, name: 'Soon gone', contacts }).expect(201);
    await as(tenant, 'admin').delete(`/customers/${customer.id}`).expect(200);
    await as(tenant).get(`/contact-groups/${group.body.data.id}`).expect(404);
    const list = await as(tenant).get(`/contact-groups?customerId=${customer.id}`).expect(200);
    expect(list.body.data.total).toBe(0);
  });

  it('when a contact is malformed, then 400 with the path of that contact', async () => {
    const customer = await createCustomer(tenant);
    const res = await as(tenant).post('/contact-groups', {
      customerId: customer.id,
      name: 'Broken',
      contacts: [
        { name: 'Fine', email: 'fine@example.com' },
        { name: 'Broken', email: 'not-an-email' },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'body.contacts.1.email' })]);
  });
});

describe('cross-organisation isolation', () => {
  let customer: { id: string; externalId: string | null };
  let entity: { id: string; identifier: string | null; addresses: Array<{ id: string }> };
  let groupId: string;
  const tag = unique('isolated');

  beforeAll(async () => {
    customer = await createCustomer(tenant, { name: `${tag} customer`, externalId: `${tag}-ext` });
    entity = await createEntity(tenant, { type: 'customer', customerId: customer.id, name: `${tag} entity`, identifier: `${tag}-ident`, address });
    const group = await as(tenant)
      .post('/contact-groups', { customerId: customer.id, name: `${tag} group`, contacts: [{ name: 'Ann', email: 'ann@example.com' }] })
      .expect(201);
    groupId = group.body.data.id;
  });

  it("when another organisation reads the first one's ids, then 404 each time", async () => {
    const reads = await Promise.all([
      as(other).get(`/customers/${customer.id}`),
      as(other).get(`/entities/${entity.id}`),
      as(other).get(`/entities/by-identifier/${entity.identifier}`),
      as(other).get(`/contact-groups/${groupId}`),
    ]);
    expect(reads.map((res) => res.status)).toEqual([404, 404, 404, 404]);
  });

  it("when another organisation lists, then none of the first one's records appear", async () => {
    const lists = await Promise.all([
      as(other).get(`/customers?search=${tag}`),
      as(other).get(`/entities?search=${tag}`),
      as(other).get(`/contact-groups?customerId=${customer.id}`),
    ]);
    for (const res of lists) expect(res.body.data).toMatchObject({ items: [], total: 0 });
    const everything = await Promise.all([as(other).get('/customers?limit=100'), as(other).get('/entities?limit=100'), as(other).get('/contact-groups?limit=100')]);
    const ids = everything.flatMap((res) => res.body.data.items.map((item: { id: string }) => item.id));
    expect(ids).not.toEqual(expect.arrayContaining([customer.id]));
    expect(ids).not.toEqual(expect.arrayContaining([entity.id]));
    expect(ids).not.toEqual(expect.arrayContaining([groupId]));
  });

  it("when another organisation writes against the first one's ids, then 404 and nothing changes", async () => {
    const contacts = [{ name: 'Eve', email: 'eve@example.com' }];
    const writes = await Promise.all([
      as(other).post('/entities', { type: 'customer', name: 'Hijack', customerId: customer.id }),
      as(other).post('/contact-groups', { customerId: customer.id, name: 'Hijack', contacts }),
      as(other).post(`/entities/${entity.id}/addresses`, address),
      as(other).delete(`/entities/${entity.id}/addresses/${entity.addresses[0]!.id}`),
      as(other).delete(`/entities/${entity.id}`),
      as(other).delete(`/contact-groups/${groupId}`),
      as(other, 'admin').delete(`/customers/${customer.id}`),
    ]);
    expect(writes.map((res) => res.status)).toEqual([404, 404, 404, 404, 404, 404, 404]);
    const entityNow = await as(tenant).get(`/entities/${entity.id}`).expect(200);
    expect(entityNow.body.data.addresses).toHaveLength(1);
    await as(tenant).get(`/customers/${customer.id}`).expect(200);
    await as(tenant).get(`/contact-groups/${groupId}`).expect(200);
  });
});
