import type { Store } from 'express-rate-limit';
import type { Logger } from 'pino';
import type { Config } from './config';
import type { AccessTokenIssuer } from './modules/auth';
import type { ApiServices } from './services';

/** What the API's routes are built from: configuration for HTTP concerns, and the services. */
export interface AppDeps {
  config: Config;
  logger: Logger;
  accessTokens: AccessTokenIssuer;
  services: ApiServices;
  /**
   * Where a rate limiter keeps its counters, by limiter name. Absent (or answering undefined): this
   * process's memory, which is right for one API process only.
   */
  rateLimitStore?: (name: string) => Store | undefined;
}
