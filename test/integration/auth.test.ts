import { SignJWT } from 'jose';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'auth');
});
afterAll(() => api.close());

// Every error but the contract's 403 carries at least one item.
const UNAUTHORIZED = { status: 'error', message: 'Unauthorized', errors: [{ code: 1007, message: expect.any(String) }] };

function base64url(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

describe('system login', () => {
  it('when the key and secret are right, then it returns an access token, a refresh token and the lifetime', async () => {
    const res = await api.http().post('/auth/system-login').send({ clientKey: tenant.clientKey, clientSecret: tenant.clientSecret });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', message: 'Success' });
    expect(res.body.data.accessToken.split('.')).toHaveLength(3);
    expect(res.body.data.refreshToken).toEqual(expect.any(String));
    expect(res.body.data.expiresIn).toBe(900);
    const claims = JSON.parse(Buffer.from(res.body.data.accessToken.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ sub: tenant.appId, org: tenant.organisationId, role: 'SystemUser' });
    expect(claims.exp - claims.iat).toBe(900);
    expect(claims.jti).toEqual(expect.any(String));
  });

  it('when the secret is wrong, then 401 in the error envelope', async () => {
    const res = await api.http().post('/auth/system-login').send({ clientKey: tenant.clientKey, clientSecret: 'cs_wrong' });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ status: 'error', message: 'Invalid credentials', errors: [{ code: 1007, message: 'Invalid credentials' }] });
  });

  it('when the key is unknown, then 401', async () => {
    const res = await api.http().post('/auth/system-login').send({ clientKey: 'ck_unknown', clientSecret: tenant.clientSecret });
    expect(res.status).toBe(401);
  });

  it('when the body lacks the secret, then 400 with a validation item', async () => {
    const res = await api.http().post('/auth/system-login').send({ clientKey: tenant.clientKey });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'body.clientSecret' })]);
  });

  it('when the secrets are stored, then only as scrypt hashes', async () => {
    const credential = await api.db('app_credentials').where({ client_key: tenant.clientKey }).first();
    expect(credential.secret_hash).toMatch(/^scrypt\$/);
    expect(credential.secret_hash).not.toContain(tenant.clientSecret);
    const user = await api.db('users').where({ id: tenant.adminUserId }).first();
    expect(user.password_hash).toMatch(/^scrypt\$/);
  });
});

describe('admin login', () => {
  it('when the password is wrong, then 401', async () => {
    const res = await api.http().post('/auth/login').send({ email: tenant.adminEmail, password: 'nope' });
    expect(res.status).toBe(401);
  });

  it('when failed logins repeat past the limit, then 429 with Retry-After', async () => {
    const limited = await startTestApi({ LOGIN_MAX_FAILURES: '3' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i += 1) {
        const res = await limited.http().post('/auth/login').send({ email: tenant.adminEmail, password: `wrong-${i}` });
        statuses.push(res.status);
        if (res.status === 429) {
          expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
          expect(res.body).toMatchObject({ status: 'error', errors: [{ code: 1004 }] });
        }
      }
      expect(statuses).toEqual([401, 401, 401, 429]);
      // The limit is per identifier: another admin is not locked out.
      const other = await createTenant(limited, 'auth-other');
      expect(other.adminToken).toEqual(expect.any(String));
    } finally {
      await limited.close();
    }
  });

  it('when one address fails on many identifiers, then it is limited across them too', async () => {
    const limited = await startTestApi({ LOGIN_MAX_FAILURES: '3', LOGIN_MAX_FAILURES_PER_ADDRESS: '4' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i += 1) statuses.push((await limited.http().post('/auth/login').send({ email: `nobody-${i}@example.com`, password: 'wrong' })).status);
      // A fifth identifier, and a client key: the address has spent its failures on both login routes.
      statuses.push((await limited.http().post('/auth/login').send({ email: 'nobody-4@example.com', password: 'wrong' })).status);
      statuses.push((await limited.http().post('/auth/system-login').send({ clientKey: 'ck_nobody', clientSecret: 'wrong' })).status);
      expect(statuses).toEqual([401, 401, 401, 401, 429, 429]);
    } finally {
      await limited.close();
    }
  });
});

describe('bearer tokens', () => {
  it('when the token is missing, then 401', async () => {
    const res = await api.http().get('/customers');
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED);
  });

  it('when the token is garbage, then 401', async () => {
    const res = await api.http().get('/apps').set(bearer('not-a-jwt'));
    expect(res.status).toBe(401);
  });

  it('when the token is signed with another key, then 401', async () => {
    const forged = await new SignJWT({ org: tenant.organisationId, role: 'Admin' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(tenant.adminUserId)
      .setJti('x')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('another-secret-another-secret-another'));
    const res = await api.http().get('/apps').set(bearer(forged));
    expect(res.status).toBe(401);
  });

  it('when the token says alg none, then 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const unsigned = `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({
      sub: tenant.adminUserId,
      org: tenant.organisationId,
      role: 'Admin',
      jti: 'x',
      iat: now,
      exp: now + 600,
    })}.`;
    const res = await api.http().get('/apps').set(bearer(unsigned));
    expect(res.status).toBe(401);
  });

  it('when the token has expired, then 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ org: tenant.organisationId, role: 'Admin' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(tenant.adminUserId)
      .setJti('x')
      .setIssuedAt(now - 1000)
      .setExpirationTime(now - 100)
      .sign(new TextEncoder().encode(api.config.JWT_SECRET!));
    const res = await api.http().get('/apps').set(bearer(expired));
    expect(res.status).toBe(401);
  });

  it('when the token is valid, then the call goes through', async () => {
    const res = await api.http().get('/apps').set(bearer(tenant.systemToken));
    expect(res.status).toBe(200);
  });
});

describe('refresh', () => {
  it('when a refresh token is used, then a new pair comes back and the old token is dead', async () => {
    const session = await createTenant(api, 'refresh');
    const first = await api.http().post('/auth/refresh').send({ refreshToken: session.systemRefreshToken });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({ accessToken: expect.any(String), refreshToken: expect.any(String), expiresIn: 900 });
    expect(first.body.data.refreshToken).not.toBe(session.systemRefreshToken);
    const apps = await api.http().get('/apps').set(bearer(first.body.data.accessToken));
    expect(apps.status).toBe(200);
  });

  it('when a spent token is reused, then 401 and its whole family is revoked', async () => {
    const session = await createTenant(api, 'reuse');
    const rotated = await api.http().post('/auth/refresh').send({ refreshToken: session.systemRefreshToken }).expect(200);
    const reuse = await api.http().post('/auth/refresh').send({ refreshToken: session.systemRefreshToken });
    expect(reuse.status).toBe(401);
    // The descendant issued before the reuse was detected is dead too.
    const descendant = await api.http().post('/auth/refresh').send({ refreshToken: rotated.body.data.refreshToken });
    expect(descendant.status).toBe(401);
    const live = await api.db('refresh_tokens').where({ subject_id: session.appId }).whereNull('revoked_at');
    expect(live).toHaveLength(0);
  });

  it('when the token is unknown, then 401', async () => {
    const res = await api.http().post('/auth/refresh').send({ refreshToken: 'unknown' });
    expect(res.status).toBe(401);
  });
});

describe('system users and apps', () => {
  it('when an admin creates a system user, then the secret is shown once and works', async () => {
    const created = await api.http().post('/users/system').set(bearer(tenant.adminToken)).send({});
    expect(created.status).toBe(201);
    const { appId, clientKey, clientSecret } = created.body.data;
    const credentials = await api.http().get(`/apps/${appId}/credentials`).set(bearer(tenant.adminToken)).expect(200);
    expect(credentials.body.data).toEqual([expect.objectContaining({ clientKey, appId })]);
    expect(JSON.stringify(credentials.body)).not.toContain(clientSecret);
    await api.http().post('/auth/system-login').send({ clientKey, clientSecret }).expect(200);
  });

  it('when the credentials are rotated, then the old secret and its refresh tokens stop working', async () => {
    const session = await createTenant(api, 'rotate');
    const rotated = await api.http().put(`/apps/${session.appId}/credentials`).set(bearer(session.systemToken)).send({});
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.clientKey).toBe(session.clientKey);
    await api.http().post('/auth/system-login').send({ clientKey: session.clientKey, clientSecret: session.clientSecret }).expect(401);
    await api.http().post('/auth/refresh').send({ refreshToken: session.systemRefreshToken }).expect(401);
    const fresh = await api
      .http()
      .post('/auth/system-login')
      .send({ clientKey: session.clientKey, clientSecret: rotated.body.data.clientSecret })
      .expect(200);
    // The access token of the old secret ends too, within the second a token version is cached.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const old = await api.http().get('/customers').set(bearer(session.systemToken));
    expect(old.status).toBe(401);
    expect(old.body.errors[0]).toMatchObject({ message: 'A valid bearer access token is required' });
    await api.http().get('/customers').set(bearer(fresh.body.data.accessToken)).expect(200);
  });

  it("when a system user rotates another app's credentials, then 403 and the other app's secret still works; an admin may", async () => {
    const other = await api.http().post('/users/system').set(bearer(tenant.adminToken)).send({}).expect(201);
    const { appId, clientKey, clientSecret } = other.body.data;
    const takeover = await api.http().put(`/apps/${appId}/credentials`).set(bearer(tenant.systemToken)).send({});
    expect(takeover.status).toBe(403);
    expect(takeover.body).toEqual({ status: 'error', message: 'Forbidden', errors: [] });
    await api.http().post('/auth/system-login').send({ clientKey, clientSecret }).expect(200);
    await api.http().put(`/apps/${appId}/credentials`).set(bearer(tenant.adminToken)).send({}).expect(200);
    await api.http().post('/auth/system-login').send({ clientKey, clientSecret }).expect(401);
  });

  it('when an admin deletes an app, then its credentials no longer log in and its access tokens end at once', async () => {
    const session = await createTenant(api, 'delete-app');
    await api.http().get('/customers').set(bearer(session.systemToken)).expect(200);
    await api.http().delete(`/apps/${session.appId}`).set(bearer(session.adminToken)).expect(200);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await api.http().get('/customers').set(bearer(session.systemToken)).expect(401);
    await api.http().post('/auth/system-login').send({ clientKey: session.clientKey, clientSecret: session.clientSecret }).expect(401);
    await api.http().get(`/apps/${session.appId}`).set(bearer(session.adminToken)).expect(404);
  });
});
