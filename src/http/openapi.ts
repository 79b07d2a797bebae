import { z } from 'zod';
import type { Route } from './route';

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  return rest;
}

function objectProperties(schema: z.ZodType | undefined): Array<[string, JsonSchema, boolean]> {
  if (!schema) return [];
  const json = jsonSchema(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
  const required = new Set(json.required ?? []);
  return Object.entries(json.properties ?? {}).map(([name, property]) => [name, property, required.has(name)]);
}

const errorEnvelope = {
  type: 'object',
  required: ['status', 'message', 'errors'],
  properties: {
    status: { const: 'error' },
    message: { type: 'string' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        properties: { code: { type: ['integer', 'string'] }, path: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
};

function successEnvelope(data: JsonSchema): JsonSchema {
  return {
    type: 'object',
    required: ['status', 'message', 'data'],
    properties: { status: { const: 'success' }, message: { const: 'Success' }, data },
  };
}

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
});

/** OpenAPI 3.1 from the same zod schemas the routes validate with: the document cannot drift from the code. */
export function buildOpenApiDocument(routes: readonly Route[], info: { title: string; version: string }): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const parameters = [
      ...objectProperties(route.params).map(([name, schema]) => ({ name, in: 'path', required: true, schema })),
      ...objectProperties(route.query).map(([name, schema, required]) => ({ name, in: 'query', required, schema })),
    ];
    const status = String(route.successStatus ?? 200);
    const responses: Record<string, unknown> = {
      [status]: route.rawResponse
        ? { description: 'Document', content: { [route.rawResponse.contentType]: { schema: { type: 'string', format: 'binary' } } } }
        : {
            description: 'Success',
            content: { 'application/json': { schema: successEnvelope(route.response ? jsonSchema(route.response, 'output') : {}) } },
          },
      '400': errorResponse('Validation failed or malformed JSON'),
      '404': errorResponse('Not found, or not in the caller\'s organisation'),
    };
    if (route.access.kind !== 'public') {
      responses['401'] = errorResponse('Token missing, invalid or expired');
      responses['429'] = errorResponse('Rate limited; see Retry-After');
    }
    if (route.access.kind === 'actions') responses['403'] = errorResponse('Forbidden: the role lacks a required action');
    const operation: Record<string, unknown> = {
      operationId: `${route.method}${route.path.replace(/[{}]/g, '').replace(/[/-](\w)/g, (_m, c: string) => c.toUpperCase())}`,
      summary: route.summary,
      tags: [route.tag],
      parameters,
      responses,
      security: route.access.kind === 'public' ? [] : [{ bearerAuth: [] }],
    };
    if (route.access.kind === 'actions') operation['x-required-actions'] = route.access.actions;
    if (route.body) {
      operation.requestBody = {
        required: !route.body.safeParse(undefined).success,
        content: { 'application/json': { schema: jsonSchema(route.body, 'input') } },
      };
    }
    paths[route.path] ??= {};
    paths[route.path]![route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: { ...info, description: 'Billing and metering API. Every response uses the success or error envelope.' },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: { ErrorEnvelope: errorEnvelope },
    },
  };
}
