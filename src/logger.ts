import pino, { type Logger } from 'pino';
import type { Config } from './config';

/** Structured JSON logs; `destination` 2 (stderr) keeps stdout free for commands that print results. */
export function createLogger(config: Config, destination: 1 | 2 = 1): Logger {
  return pino(
    {
      level: config.LOG_LEVEL,
      base: { service: 'billing-metering' },
      redact: ['req.headers.authorization', 'password', 'clientSecret', 'refreshToken'],
    },
    pino.destination({ fd: destination, sync: false }),
  );
}
