import { z } from 'zod';
import { documented } from '../../http/openapi';
import { defineRoute, publicAccess, type Route } from '../../http/route';
import type { AppDeps } from '../../deps';

const component = z.enum(['up', 'down']);
const healthSchema = z.object({ postgres: component, temporal: component, worker: component });

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
    documented(
      defineRoute({
        method: 'get',
        path: '/health/live',
        summary: 'Liveness for orchestrators: 200 while the process serves HTTP, whatever its dependencies do',
        tag: 'Health',
        access: publicAccess,
        response: z.object({ status: z.literal('up') }),
        handler: async () => ({ status: 'up' as const }),
      }),
      { never: [503] },
    ),
    defineRoute({
      method: 'get',
      path: '/health/ready',
      summary: 'Readiness for orchestrators: 200 when Postgres and Temporal answer, else 503 naming what is down',
      tag: 'Health',
      access: publicAccess,
      response: healthSchema.pick({ postgres: true, temporal: true }),
      handler: async () => health.ready(),
    }),
  ];
}
