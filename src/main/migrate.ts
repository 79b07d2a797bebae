import { parseArgs } from 'node:util';
import { loadConfig, requireSetting } from '../config';
import { createDb, migrateLatest } from '../db/knex';
import { runMain } from './runtime';

/** `npm run migrate` applies every pending migration; `-- --down` rolls back the last batch. */
runMain(async () => {
  const { values } = parseArgs({ options: { down: { type: 'boolean', default: false } } });
  const config = loadConfig();
  const db = createDb(requireSetting(config, 'DATABASE_URL'), 2);
  try {
    if (values.down) {
      const [, rolledBack] = (await db.migrate.rollback()) as [number, string[]];
      process.stderr.write(`rolled back ${rolledBack.length} migration(s)\n`);
    } else {
      const applied = await migrateLatest(db);
      process.stderr.write(`applied ${applied.length} migration(s)\n`);
    }
  } finally {
    await db.destroy();
  }
});
