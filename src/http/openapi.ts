import { z } from 'zod';
import { takesNoBody, type Route } from './route';
import { MAX_ARRAY_NESTING } from '../domain/storable';
import { IDEMPOTENCY_KEY_PATTERN } from './idempotency';

type JsonSchema = Record<string, unknown>;

const STORABLE_JSON_REF = '#/components/schemas/StorableJson';

/**
 * The router refuses any text Postgres cannot store, wherever it is in the request (see
 * src/domain/storable.ts): the document says so on every string and every object key that has no stricter
 * pattern of its own, and describes free-form JSON as `StorableJson`. The pattern spells out the NUL
 * character only: a lone surrogate cannot be written in the regular expressions OpenAPI tools run, so the
 * descriptions say it.
 */
const STORABLE_TEXT = '^[^\\u0000]*$';

/**
 * Storable JSON as one schema per level, each keyword applying to its own type (`pattern` to strings,
 * `propertyNames` and `additionalProperties` to objects, `items` to arrays). An object's values refer back to
 * `StorableJson`; an array's items are the next level spelled out, since generated TypeScript types cannot
 * name an array of the type being defined (TS2502). The innermost level takes no array.
 */
function storableLevel(arrayLevels: number): JsonSchema {
  return {
    type: ['null', 'boolean', 'number', 'string', 'object', ...(arrayLevels > 0 ? ['array'] : [])],
    pattern: STORABLE_TEXT,
    propertyNames: { pattern: STORABLE_TEXT },
    additionalProperties: { $ref: STORABLE_JSON_REF },
    ...(arrayLevels > 0 ? { items: storableLevel(arrayLevels - 1) } : {}),
  };
}

const storableJson = {
  description: `Any JSON value whose strings and object keys hold no NUL character and no unpaired surrogate; arrays nest directly in arrays at most ${MAX_ARRAY_NESTING} deep`,
  ...storableLevel(MAX_ARRAY_NESTING),
};

const ANNOTATIONS = new Set(['description', 'title', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly']);

function isAnyValue(schema: JsonSchema): boolean {
  return Object.keys(schema).every((key) => ANNOTATIONS.has(key));
}

function typesOf(schema: JsonSchema): string[] {
  const type = schema.type;
  return Array.isArray(type) ? (type as string[]) : typeof type === 'string' ? [type] : [];
}

/** An input schema as the router really checks it: storable text everywhere, free-form parts included. */
function storable(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  const node = schema as JsonSchema;
  if (isAnyValue(node)) return { ...node, $ref: STORABLE_JSON_REF };
  const out: JsonSchema = { ...node };
  for (const key of ['items', 'additionalProperties', 'propertyNames', 'if', 'then', 'else']) {
    if (key in out) out[key] = storable(out[key]);
  }
  for (const key of ['anyOf', 'oneOf', 'allOf', 'prefixItems']) {
    if (Array.isArray(out[key])) out[key] = (out[key] as unknown[]).map(storable);
  }
  if (out.properties) {
    out.properties = Object.fromEntries(Object.entries(out.properties as JsonSchema).map(([name, property]) => [name, storable(property)]));
  }
  const types = typesOf(out);
  if (types.includes('string') && out.pattern === undefined && out.enum === undefined && out.const === undefined) out.pattern = STORABLE_TEXT;
  if (types.includes('object')) {
    out.propertyNames ??= { pattern: STORABLE_TEXT };
    // An object of named properties takes no other (the router refuses them by path); a free-form one takes any.
    out.additionalProperties ??= out.properties ? false : { $ref: STORABLE_JSON_REF };
  }
  return out;
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  return io === 'input' ? (storable(rest) as JsonSchema) : rest;
}

/** A body whose batch items each fail alone (see `itemsJudgedAlone`): only those items may hold any text. */
function bodySchema(route: Route): JsonSchema {
  const body = jsonSchema(route.body!, 'input');
  const field = route.itemsJudgedAlone;
  const properties = body.properties as Record<string, JsonSchema> | undefined;
  if (!field || !properties?.[field]) return body;
  const { $schema: _ignored, ...raw } = z.toJSONSchema(route.body!, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  const items = ((raw.properties as Record<string, JsonSchema>)[field]!.items ?? {}) as JsonSchema;
  return { ...body, properties: { ...properties, [field]: { ...properties[field], items } } };
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
        required: ['code', 'message'],
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

const ERROR_STATUSES = {
  400: 'Validation failed (the errors name each offending input by its path), or the body is malformed JSON',
  401: 'Token missing, invalid or expired',
  403: 'Forbidden: the role lacks a required action',
  404: "Not found, or not in the caller's organisation",
  409: 'Conflicts with the current state: an illegal transition, a duplicate, an idempotency key reused with another body',
  413: 'Body over the size limit',
  415: 'Body sent with a Content-Type the operation does not take',
  422: 'A template over its render budget: past the time, output or memory limit (the errors name the limit)',
  429: 'Rate limited; see Retry-After',
  500: 'A fault of the server; the X-Request-Id header finds it in the logs',
  503: 'A dependency (Postgres, Temporal) does not answer; retry later',
} as const;

type ErrorStatus = keyof typeof ERROR_STATUSES;

/** What a route's own definition does not tell the document. */
export interface RouteDocumentation {
  /** Error statuses the route answers beyond those derived from its definition, with their meaning. */
  errors?: Partial<Record<ErrorStatus, string>>;
  /** Derived error statuses the route can never answer (503 on a route that touches no dependency). */
  never?: ErrorStatus[];
  /** Another success status the route may answer, with the same body (an idempotent replay). */
  alsoSucceedsWith?: { status: 200 | 201; description: string };
  /** The request body of a route that parses it itself (a multipart upload). */
  requestBody?: JsonSchema;
  /** A route kept for the integrations that call it, with what replaces it. */
  deprecatedFor?: string;
  /** Query parameters the route reads itself, whose names its query schema cannot list. */
  queryParameters?: Array<{ name: string; description: string; style?: 'form' | 'deepObject'; explode?: boolean; schema: JsonSchema }>;
}

const documentation = new WeakMap<Route, RouteDocumentation>();

/** The routes that render an e-mail template (theirs or the organisation's): they may answer 422. */
export const RENDERS_TEMPLATES: RouteDocumentation = { errors: { 422: ERROR_STATUSES[422] } };

const FX_RATE_MISSING = 'the invoice is in another currency than the base currency, with no FX rate effective on its date: code 1012, the message names the currencies (from/to) and the date';

/** A route that raises an invoice (raise itself, or paid from draft): a missing FX rate answers 422. */
export const RAISES_INVOICES: RouteDocumentation = { errors: { 422: `An invoice cannot be raised: ${FX_RATE_MISSING}` } };

/** A route that may raise and send an invoice: a template that fails or a missing FX rate answers 422. */
export const RAISES_AND_SENDS_INVOICES: RouteDocumentation = { errors: { 422: `${ERROR_STATUSES[422]}; or ${FX_RATE_MISSING}` } };

/**
 * The query parameters a route takes, as its document lists them: the names of its query schema and
 * those it reads itself; a `deepObject` one (`filter`) is taken as `filter[key]` or `filter.key`.
 */
export function queryParameterNames(route: Route): { names: Set<string>; deep: string[] } {
  const extra = documentation.get(route)?.queryParameters ?? [];
  return {
    names: new Set([...objectProperties(route.query).map(([name]) => name), ...extra.map((parameter) => parameter.name)]),
    deep: extra.filter((parameter) => parameter.style === 'deepObject').map((parameter) => parameter.name),
  };
}

/** Adds to the document what a route's definition cannot say; returns the route. */
export function documented(route: Route, extra: RouteDocumentation): Route {
  documentation.set(route, extra);
  return route;
}

function errorStatusesOf(route: Route, extra: RouteDocumentation): Partial<Record<ErrorStatus, string>> {
  const secured = route.access.kind !== 'public';
  const takesBody = route.body !== undefined || extra.requestBody !== undefined;
  const derived: Partial<Record<ErrorStatus, string>> = { 400: ERROR_STATUSES[400] };
  if (secured) Object.assign(derived, { 401: ERROR_STATUSES[401], 429: ERROR_STATUSES[429] });
  if (route.access.kind === 'actions') derived[403] = ERROR_STATUSES[403];
  if (route.params || (secured && takesBody)) derived[404] = ERROR_STATUSES[404];
  if (secured && route.method !== 'get') derived[409] = ERROR_STATUSES[409];
  // A route that takes no body still reads one sent as JSON (to refuse its properties), and refuses any other type.
  if (takesBody || takesNoBody(route)) Object.assign(derived, { 413: ERROR_STATUSES[413], 415: ERROR_STATUSES[415] });
  Object.assign(derived, { 500: ERROR_STATUSES[500], 503: ERROR_STATUSES[503] }, extra.errors);
  for (const status of extra.never ?? []) delete derived[status];
  return derived;
}

/** Every authenticated POST takes an optional Idempotency-Key (see src/http/idempotency.ts). */
function headerParameters(route: Route) {
  if (route.method !== 'post' || route.access.kind === 'public') return [];
  return [
    {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: 'Makes a retry safe: a repeat with the same key and request answers what the first answered (Idempotent-Replayed: true); the same key with another request is a 409',
      schema: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN.source },
    },
  ];
}

function operationOf(route: Route): Record<string, unknown> {
  const extra = documentation.get(route) ?? {};
  const parameters = [
    ...objectProperties(route.params).map(([name, schema]) => ({ name, in: 'path', required: true, schema })),
    ...objectProperties(route.query).map(([name, schema, required]) => ({ name, in: 'query', required, ...(schema.deprecated === true ? { deprecated: true } : {}), schema })),
    ...(extra.queryParameters ?? []).map((parameter) => ({ ...parameter, in: 'query', required: false })),
    ...headerParameters(route),
  ];
  const success = route.rawResponse
    ? { description: 'Document', content: { [route.rawResponse.contentType]: { schema: { type: 'string', format: 'binary' } } } }
    : { description: 'Success', content: { 'application/json': { schema: successEnvelope(route.response ? jsonSchema(route.response, 'output') : {}) } } };
  const responses: Record<string, unknown> = { [String(route.successStatus ?? 200)]: success };
  if (extra.alsoSucceedsWith) responses[String(extra.alsoSucceedsWith.status)] = { ...success, description: extra.alsoSucceedsWith.description };
  if (route.accepted) {
    responses['202'] = { description: 'Accepted: the work goes on; the body says how to follow it', content: { 'application/json': { schema: successEnvelope(jsonSchema(route.accepted, 'output')) } } };
  }
  for (const [status, description] of Object.entries(errorStatusesOf(route, extra))) responses[status] = errorResponse(description);
  const operation: Record<string, unknown> = {
    operationId: `${route.method}${route.path.replace(/[{}]/g, '').replace(/[/-](\w)/g, (_m, c: string) => c.toUpperCase())}`,
    summary: route.summary,
    tags: [route.tag],
    parameters,
    responses,
    security: route.access.kind === 'public' ? [] : [{ bearerAuth: [] }],
  };
  if (route.access.kind === 'actions') operation['x-required-actions'] = route.access.actions;
  if (extra.deprecatedFor) Object.assign(operation, { deprecated: true, description: `Deprecated: use ${extra.deprecatedFor}, which answers the same.` });
  if (route.body) {
    operation.requestBody = {
      required: !route.body.safeParse(undefined).success,
      content: { 'application/json': { schema: bodySchema(route) } },
    };
  } else if (extra.requestBody) {
    operation.requestBody = extra.requestBody;
  }
  return operation;
}

const DESCRIPTION = [
  'Billing and metering API. Every response uses the success or error envelope.',
  'A method a path does not have answers 405 with the error envelope and an Allow header listing the methods it has.',
].join('\n\n');

const LICENSE = { name: 'Apache License 2.0', identifier: 'Apache-2.0' };

/**
 * The API that serves the document: `/` resolves against the address /openapi.json was read from, so the
 * document holds for every deployment whatever its public address.
 */
const SERVERS = [{ url: '/', description: 'The API that serves this document' }];

/** OpenAPI 3.1 from the same zod schemas the routes validate with: the document cannot drift from the code. */
export function buildOpenApiDocument(routes: readonly Route[], info: { title: string; version: string }): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    paths[route.path]![route.method] = operationOf(route);
  }
  return {
    openapi: '3.1.0',
    info: { ...info, description: DESCRIPTION, license: LICENSE },
    servers: SERVERS,
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: { ErrorEnvelope: errorEnvelope, StorableJson: storableJson },
    },
  };
}
