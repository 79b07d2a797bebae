import type { Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import pino from 'pino';
import request from 'supertest';
import { createApiServices, serviceDepsFrom } from '../../../src/services';
import { createApp } from '../../../src/app';
import { loadConfig, type Config } from '../../../src/config';
import { createDb } from '../../../src/db/knex';
import { createPostgresRateLimitStores } from '../../../src/http/rate-limit-store';
import { createAccessTokens } from '../../../src/modules/auth/access-tokens';
import { bootstrapOrganisation } from '../../../src/modules/organisations/bootstrap.service';
import { connectTemporal, type TemporalHandle } from '../../../src/temporal/client';

export interface TestApi {
  url: string;
  http: () => ReturnType<typeof request>;
  db: Knex;
  temporal: TemporalHandle;
  config: Config;
  close: () => Promise<void>;
}

/** The real app on a real port, against the suite's database and Temporal server. */
export async function startTestApi(overrides: Record<string, string> = {}): Promise<TestApi> {
  const config = loadConfig({ ...process.env, ...overrides });
  const db = createDb(config.DATABASE_URL!, 10, undefined, { preparedStatements: config.DATABASE_PREPARED_STATEMENTS });
  const temporal = await connectTemporal(config, config.TEMPORAL_ADDRESS!);
  const accessTokens = createAccessTokens(config.JWT_SECRET!, config.ACCESS_TOKEN_TTL_SECONDS);
  const services = createApiServices({ ...serviceDepsFrom(config, db), temporal, accessTokens });
  const logger = pino({ level: 'silent' });
  // As startApi does: RATE_LIMIT_STORE=postgres shares the counters with every other API on the database.
  const rateLimits = config.RATE_LIMIT_STORE === 'postgres' ? createPostgresRateLimitStores(db, logger) : undefined;
  const app = createApp({ config, logger, accessTokens, services, rateLimitStore: rateLimits?.storeFor });
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    url,
    http: () => request(url),
    db,
    temporal,
    config,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rateLimits?.close();
      await temporal.connection.close();
      await db.destroy();
    },
  };
}

export interface Tenant {
  organisationId: string;
  adminUserId: string;
  adminEmail: string;
  adminPassword: string;
  adminToken: string;
  clientKey: string;
  clientSecret: string;
  appId: string;
  systemToken: string;
  systemRefreshToken: string;
}

/** A fresh organisation with an admin and a SystemUser, each logged in through the API. */
export async function createTenant(api: TestApi, label = 'org'): Promise<Tenant> {
  const adminEmail = `admin-${randomUUID()}@example.com`;
  const adminPassword = 'correct horse battery staple';
  const { organisationId, adminUserId } = await bootstrapOrganisation(api.db, {
    organisationName: `${label}-${randomUUID()}`,
    email: adminEmail,
    password: adminPassword,
  });
  const login = await api.http().post('/auth/login').send({ email: adminEmail, password: adminPassword }).expect(200);
  const adminToken = login.body.data.accessToken as string;
  const created = await api.http().post('/users/system').set('Authorization', `Bearer ${adminToken}`).send({ name: 'integration' }).expect(201);
  const { clientKey, clientSecret, appId } = created.body.data as { clientKey: string; clientSecret: string; appId: string };
  const system = await api.http().post('/auth/system-login').send({ clientKey, clientSecret }).expect(200);
  return {
    organisationId,
    adminUserId,
    adminEmail,
    adminPassword,
    adminToken,
    clientKey,
    clientSecret,
    appId,
    systemToken: system.body.data.accessToken,
    systemRefreshToken: system.body.data.refreshToken,
  };
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
