import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from './config';
import type { AccessTokenIssuer } from './modules/auth/access-tokens';
import type { ApiServices } from './services';
import type { TemporalHandle } from './temporal/client';

/** What the API's routes are built from; tests build the same thing against real services. */
export interface AppDeps {
  config: Config;
  db: Knex;
  logger: Logger;
  temporal: TemporalHandle;
  accessTokens: AccessTokenIssuer;
  services: ApiServices;
}
