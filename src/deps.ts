import type { Logger } from 'pino';
import type { Config } from './config';
import type { AccessTokenIssuer } from './modules/auth/access-tokens';
import type { ApiServices } from './services';

/** What the API's routes are built from: configuration for HTTP concerns, and the services. */
export interface AppDeps {
  config: Config;
  logger: Logger;
  accessTokens: AccessTokenIssuer;
  services: ApiServices;
}
