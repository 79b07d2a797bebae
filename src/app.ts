import { randomUUID } from 'node:crypto';
import express, { type Express } from 'express';
import helmet from 'helmet';
import { pinoHttp } from 'pino-http';
import swaggerUi from 'swagger-ui-express';
import type { AppDeps } from './deps';
import { boundedJsonDepth, JSON_TYPES } from './http/body-guards';
import { errorHandler, notFoundHandler } from './http/error-handler';
import { sendSuccess } from './http/envelope';
import { answerOptions, declaredTemplate, methodNotAllowed } from './http/method-not-allowed';
import { buildOpenApiDocument } from './http/openapi';
import { buildRouter } from './http/router';
import { allRoutes } from './modules';
import { keepingRawBody } from './http/raw-body';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * Express's `trust proxy` from TRUST_PROXY: off by default, so that a client cannot pick its own address
 * (and so its own failed-login counter) with X-Forwarded-For; `true`, a hop count, or the proxies' addresses.
 */
export function trustProxySetting(value: string): boolean | number | string {
  if (value === 'false' || value === '0' || value === '') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value;
}

/** The Express app without listen(), so tests and every entry point build the same thing. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', trustProxySetting(deps.config.TRUST_PROXY));
  // First, so that every answer is counted and timed, those of the middleware below included.
  app.use(deps.services.metrics.middleware);
  app.use(helmet());

  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (req, res) => {
        const given = req.headers['x-request-id'];
        const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? 'error' : 'info'),
    }),
  );
  app.use(
    express.json({ limit: deps.config.BODY_LIMIT_BYTES, type: JSON_TYPES, verify: keepingRawBody(boundedJsonDepth(deps.config.JSON_MAX_DEPTH)) }),
  );

  const routes = allRoutes(deps);
  deps.services.metrics.declareRoutes(declaredTemplate(routes));
  const document = buildOpenApiDocument(routes, { title: 'Billing and Metering API', version: '1.0.0' });
  // No /metrics here: Prometheus scrapes the metrics port (METRICS_PORT), which clients never reach, so
  // every spelling of /metrics on this port is a 404 like any unknown path (docs/observability.md).
  app.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  app.use('/docs', swaggerUi.serve, swaggerUi.setup(document, { customSiteTitle: 'Billing and Metering API' }));
  app.get('/', (_req, res) => sendSuccess(res, { name: 'billing-metering', docs: '/docs', openapi: '/openapi.json' }));

  // OPTIONS names the methods of the one route a path matches, not of every pattern it happens to fit.
  app.use(answerOptions(routes));
  app.use(
    buildRouter(routes, {
      accessTokens: deps.accessTokens,
      sessionVersions: deps.services.sessionVersions,
      rateLimitPerMinute: deps.config.RATE_LIMIT_PER_MINUTE,
      rateLimitStore: deps.rateLimitStore?.('per-token'),
      idempotency: deps.services.idempotency,
      validateResponses: deps.config.NODE_ENV === 'test',
    }),
  );
  app.use(methodNotAllowed(routes));
  app.use(notFoundHandler);
  app.use(errorHandler);
  return app;
}
