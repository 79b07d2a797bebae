import { z } from 'zod';
import { MAX_ARRAY_NESTING } from '../../src/domain/storable';
import { buildOpenApiDocument, documented } from '../../src/http/openapi';
import { allowedMethods } from '../../src/http/method-not-allowed';
import { defineRoute, publicAccess, requires, type Route } from '../../src/http/route';
import { decimal, idParam, text } from '../../src/http/schemas';

const routes: Route[] = [
  defineRoute({ method: 'get', path: '/health/live', summary: 'live', tag: 'Health', access: publicAccess, handler: async () => ({}) }),
  defineRoute({ method: 'get', path: '/usage/{id}', summary: 'read', tag: 'Usage', access: requires('UsageService:getUsage'), params: idParam, handler: async () => ({}) }),
  defineRoute({ method: 'delete', path: '/usage/{id}', summary: 'delete', tag: 'Usage', access: requires('UsageService:deleteUsage'), params: idParam, handler: async () => ({}) }),
  defineRoute({
    method: 'post',
    path: '/usage/bulk',
    summary: 'bulk',
    tag: 'Usage',
    access: requires('UsageService:bulkCreateEvents'),
    body: z.object({ name: text(10), amount: decimal({ precision: 24, scale: 4 }), metadata: z.record(z.string(), z.unknown()).optional() }),
    handler: async () => ({}),
  }),
];
documented(routes[0]!, { never: [503] });
documented(routes[2]!, { deprecatedFor: 'DELETE /usage?id=…' });

type Operation = { parameters: Array<{ name: string; in: string }>; responses: Record<string, unknown>; requestBody?: { content: Record<string, { schema: Record<string, unknown> }> } };
const document = buildOpenApiDocument(routes, { title: 't', version: '1' }) as { paths: Record<string, Record<string, Operation>> } & Record<string, unknown>;
const operation = (path: string, method: string) => document.paths[path]![method]!;

describe('the OpenAPI document', () => {
  it('when built, then it names no JSON Schema dialect (Swagger UI refuses the field) and describes free-form JSON', () => {
    expect(document).not.toHaveProperty('jsonSchemaDialect');
    expect(document).toHaveProperty('components.schemas.StorableJson');
  });

  it('when built, then it names its server (the API that serves it, by a relative URL) and its licence', () => {
    expect(document.servers).toEqual([{ url: '/', description: expect.any(String) }]);
    expect(document.info).toMatchObject({ license: { identifier: 'Apache-2.0' } });
  });

  it('when free-form JSON is described, then arrays in arrays are spelled out to a depth rather than referring back, and objects refer back', () => {
    const storable = (document as unknown as { components: { schemas: Record<string, Record<string, unknown>> } }).components.schemas.StorableJson!;
    let level: Record<string, unknown> | undefined = storable;
    let depth = 0;
    while (level) {
      expect(level.additionalProperties).toEqual({ $ref: '#/components/schemas/StorableJson' });
      if (level.items) expect(level.items).not.toHaveProperty('$ref');
      level = level.items as Record<string, unknown> | undefined;
      depth += level ? 1 : 0;
    }
    expect(depth).toBe(MAX_ARRAY_NESTING);
  });

  it('when a route is documented as deprecated, then its operation says so and names what replaces it', () => {
    expect(operation('/usage/{id}', 'delete')).toMatchObject({ deprecated: true, description: expect.stringContaining('DELETE /usage?id=') });
    expect(operation('/usage/{id}', 'get')).not.toHaveProperty('deprecated');
  });

  it('when an operation is listed, then its error statuses are those it can answer', () => {
    expect(Object.keys(operation('/health/live', 'get').responses).sort()).toEqual(['200', '400', '500']);
    expect(Object.keys(operation('/usage/{id}', 'get').responses).sort()).toEqual(['200', '400', '401', '403', '404', '429', '500', '503']);
    // A delete takes no body: one sent as JSON is read to refuse its properties, one of another type is 415.
    expect(Object.keys(operation('/usage/{id}', 'delete').responses).sort()).toEqual(['200', '400', '401', '403', '404', '409', '413', '415', '429', '500', '503']);
    expect(Object.keys(operation('/usage/bulk', 'post').responses).sort()).toEqual(['200', '400', '401', '403', '404', '409', '413', '415', '429', '500', '503']);
  });

  it('when a POST is authenticated, then it documents the Idempotency-Key header', () => {
    expect(operation('/usage/bulk', 'post').parameters).toEqual([expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false })]);
    expect(operation('/usage/{id}', 'get').parameters.map((parameter) => parameter.name)).toEqual(['id']);
  });

  it('when a body is described, then its text refuses NUL characters, it takes no property it does not name, and its free-form parts are StorableJson', () => {
    const schema = operation('/usage/bulk', 'post').requestBody!.content['application/json']!.schema as {
      properties: Record<string, Record<string, unknown>>;
      additionalProperties: unknown;
    };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.name).toMatchObject({ type: 'string', maxLength: 10 });
    expect(new RegExp(schema.properties.name!.pattern as string).test('a\u0000b')).toBe(false);
    expect(schema.properties.metadata).toMatchObject({ additionalProperties: { $ref: '#/components/schemas/StorableJson' } });
  });
});

describe('Allow', () => {
  const allowFor = allowedMethods(routes);

  it('when a path is declared, then Allow lists its methods, HEAD with GET, and OPTIONS', () => {
    expect(allowFor('/usage/use_1')).toBe('DELETE, GET, HEAD, OPTIONS');
  });

  it('when a literal path and a parameter path both match, then the literal one names the methods', () => {
    expect(allowFor('/usage/bulk')).toBe('OPTIONS, POST');
    expect(allowFor('/USAGE/bulk/')).toBe('OPTIONS, POST');
  });

  it('when no declared path matches, then there is no Allow', () => {
    expect(allowFor('/usage')).toBeUndefined();
    expect(allowFor('/usage/a/b')).toBeUndefined();
  });
});
