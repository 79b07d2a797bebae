import { randomUUID } from 'node:crypto';
import express, { type Express } from 'express';
import { pinoHttp } from 'pino-http';
import swaggerUi from 'swagger-ui-express';
import type { AppDeps } from './deps';
import { errorHandler, notFoundHandler } from './http/error-handler';
import { sendSuccess } from './http/envelope';
import { buildOpenApiDocument } from './http/openapi';
import { buildRouter } from './http/router';
import { allRoutes } from './modules';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** The Express app without listen(), so tests and every entry point build the same thing. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');

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
  app.use(express.json({ limit: deps.config.BODY_LIMIT_BYTES, type: ['application/json', 'application/*+json'] }));

  const routes = allRoutes(deps);
  const document = buildOpenApiDocument(routes, { title: 'Billing and Metering API', version: '1.0.0' });
  app.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  app.use('/docs', swaggerUi.serve, swaggerUi.setup(document, { customSiteTitle: 'Billing and Metering API' }));
  app.get('/', (_req, res) => sendSuccess(res, { name: 'billing-metering', docs: '/docs', openapi: '/openapi.json' }));

  app.use(
    buildRouter(routes, {
      accessTokens: deps.accessTokens,
      rateLimitPerMinute: deps.config.RATE_LIMIT_PER_MINUTE,
      rateLimitStore: deps.rateLimitStore?.('per-token'),
      validateResponses: deps.config.NODE_ENV === 'test',
    }),
  );
  app.use(notFoundHandler);
  app.use(errorHandler);
  return app;
}
