import { parseArgs } from 'node:util';
import { z } from 'zod';
import { CURRENCY_CODES } from '../http/schemas';
import { loadConfig, SetupError } from '../config';
import { isDatabaseUnavailable } from '../db/errors';
import { createDb, migrateLatest } from '../db/knex';
import { bootstrapOrganisation } from '../modules/organisations';
import { laptopDatabaseUrl } from './laptop';
import { runMain } from './runtime';

const USAGE = 'usage: npm run bootstrap -- --org "Acme Ltd" --email admin@acme.test --password <at least 8 characters> [--base-currency EUR]';

const argsSchema = z.object({
  org: z.string({ error: '--org is required' }).trim().min(1, '--org is required'),
  email: z.string({ error: '--email is required' }).email('--email must be an e-mail address'),
  password: z.string({ error: '--password is required' }).min(8, '--password must have at least 8 characters'),
  'base-currency': z.enum(CURRENCY_CODES, { error: '--base-currency must be an ISO 4217 currency code in upper case, e.g. EUR' }).optional(),
});

/**
 * Prints exactly one JSON line on stdout: `{"organisationId": "...", "adminUserId": "...", "baseCurrency": "..."}`.
 * `--base-currency` (default USD) is the organisation's base currency: every invoice in another currency
 * needs an FX rate to it.
 */
runMain(async () => {
  const { values } = parseArgs({ options: { org: { type: 'string' }, email: { type: 'string' }, password: { type: 'string' }, 'base-currency': { type: 'string' } } });
  const parsed = argsSchema.safeParse(values);
  if (!parsed.success) throw new SetupError([...parsed.error.issues.map((issue) => issue.message), USAGE].join('\n'));
  const config = loadConfig();
  // Knex's own words for a refused connection are left out: the error below says what to do about it.
  const quiet = { warn: () => undefined, error: () => undefined, debug: () => undefined };
  const db = createDb(config.DATABASE_URL ?? laptopDatabaseUrl(config), 2, quiet);
  try {
    try {
      await migrateLatest(db);
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      const where = config.DATABASE_URL
        ? 'the PostgreSQL of DATABASE_URL'
        : `the embedded PostgreSQL on 127.0.0.1:${config.EMBEDDED_POSTGRES_PORT}: run bootstrap while npm start runs, with the same DATA_DIR and EMBEDDED_POSTGRES_PORT, or set DATABASE_URL`;
      throw new SetupError(`Could not reach ${where} (${(error as Error).message})`);
    }
    const result = await bootstrapOrganisation(db, {
      organisationName: parsed.data.org,
      email: parsed.data.email,
      password: parsed.data.password,
      baseCurrency: parsed.data['base-currency'],
    });
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await db.destroy();
  }
});
