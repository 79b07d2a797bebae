import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig, SetupError } from '../config';
import { createDb, migrateLatest } from '../db/knex';
import { bootstrapOrganisation } from '../modules/organisations';
import { laptopDatabaseUrl } from './laptop';
import { runMain } from './runtime';

const argsSchema = z.object({
  org: z.string().trim().min(1, '--org is required'),
  email: z.string().email('--email must be an e-mail address'),
  password: z.string().min(8, '--password must have at least 8 characters'),
});

/** Prints exactly one JSON line on stdout: `{"organisationId": "...", "adminUserId": "..."}`. */
runMain(async () => {
  const { values } = parseArgs({ options: { org: { type: 'string' }, email: { type: 'string' }, password: { type: 'string' } } });
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
    });
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await db.destroy();
  }
});
