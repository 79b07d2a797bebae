import { loadConfig, requireSetting } from '../config';
import { createLogger } from '../logger';
import { runMain, startApi } from './runtime';

runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config);
  const api = await startApi(
    config,
    { databaseUrl: requireSetting(config, 'DATABASE_URL'), temporalAddress: requireSetting(config, 'TEMPORAL_ADDRESS') },
    logger,
    // Off unless set: production names its metrics port (docs/deployment.md).
    { metricsPort: config.METRICS_PORT ?? 0 },
  );
  const stop = async () => {
    logger.info('API stopping');
    await api.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
});
