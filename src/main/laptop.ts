import type { Config } from '../config';

/** Where `npm start` runs its embedded PostgreSQL, so other commands (bootstrap) find it too. */
export function laptopDatabaseUrl(config: Config): string {
  return `postgres://postgres:postgres@127.0.0.1:${config.EMBEDDED_POSTGRES_PORT}/billing`;
}
