import { parseArgs } from 'node:util';
import { z } from 'zod';
import { CURRENCY_CODES } from '../http/schemas';
import { loadConfig, SetupError } from '../config';
import { createDb, migrateLatest } from '../db/knex';
import { bootstrapOrganisation } from '../modules/organisations';
import { laptopDatabaseUrl } from './laptop';
import { runMain } from './runtime';

const argsSchema = z.object({
  org: z.string().trim().min(1, '--org is required'),
  email: z.string().email('--email must be an e-mail address'),
  password: z.string().min(8, '--password must have at least 8 characters'),
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
  if (!parsed.success) throw new SetupError(parsed.error.issues.map((issue) => issue.message).join('\n'));
  const config = loadConfig();
  const db = createDb(config.DATABASE_URL ?? laptopDatabaseUrl(config), 2);
  try {
    await migrateLatest(db);
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
