import express from 'express';
import request from 'supertest';
import { z } from 'zod';
import { errorHandler } from '../../src/http/error-handler';
import { defineRoute, publicAccess } from '../../src/http/route';
import { buildRouter } from '../../src/http/router';
import type { AccessTokenIssuer } from '../../src/modules/auth/access-tokens';
import type { IdempotencyService } from '../../src/modules/idempotency/idempotency.service';

const noTokens = { verify: async () => null } as unknown as AccessTokenIssuer;
// Only authenticated POSTs use it; the probe is a public GET.
const noIdempotency = {} as IdempotencyService;

/** A route whose handler can be made to answer outside its documented schema (a cast hides it from tsc). */
function appAnswering(data: unknown, validateResponses: boolean) {
  const route = defineRoute({
    method: 'get',
    path: '/probe',
    summary: 'probe',
    tag: 'Probe',
    access: publicAccess,
    response: z.object({ amount: z.string() }),
    handler: async () => data as { amount: string },
  });
  const app = express();
  app.use(buildRouter([route], { accessTokens: noTokens, rateLimitPerMinute: 100, idempotency: noIdempotency, validateResponses }));
  app.use(errorHandler);
  return app;
}

describe('answers checked against their response schema', () => {
  it('when a handler answers what its schema documents, then it is sent', async () => {
    const res = await request(appAnswering({ amount: '10.00' }, true)).get('/probe');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ amount: '10.00' });
  });

  it('when a handler answers outside its schema and the check is on (tests), then the request fails loudly', async () => {
    const res = await request(appAnswering({ amount: 10 }, true)).get('/probe');
    expect(res.status).toBe(500);
  });

  it('when the check is off (production), then the answer is sent as it is', async () => {
    const res = await request(appAnswering({ amount: 10 }, false)).get('/probe');
    expect(res.status).toBe(200);
  });
});
