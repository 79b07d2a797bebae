import { z } from 'zod';
import { defineRoute, publicAccess, type Route } from '../../http/route';
import type { AppDeps } from '../../deps';

const healthSchema = z.object({
  postgres: z.enum(['up', 'down']),
  temporal: z.enum(['up', 'down']),
  worker: z.enum(['up', 'down']),
});

export function healthRoutes(deps: AppDeps): Route[] {
  const { health } = deps.services;
  return [
    defineRoute({
      method: 'get',
      path: '/health',
      summary: 'Status of Postgres, Temporal and the worker; 503 when any is down',
      tag: 'Health',
      access: publicAccess,
      response: healthSchema,
      handler: async () => health.check(),
    }),
  ];
}
