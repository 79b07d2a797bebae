import { loadConfig, requireSetting } from '../config';
import { createLogger } from '../logger';
import { runMain, startWorker } from './runtime';

// The Temporal runtime shuts the worker down gracefully on SIGINT and SIGTERM.
runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config);
  const worker = await startWorker(
    config,
    { databaseUrl: requireSetting(config, 'DATABASE_URL'), temporalAddress: requireSetting(config, 'TEMPORAL_ADDRESS') },
    logger,
  );
  await worker.done;
  logger.info('worker stopped');
});
