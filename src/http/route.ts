import type { Request, RequestHandler, Response } from 'express';
import { z } from 'zod';
import type { Action, Role } from './permissions';

/** Who may call a route. `authenticated` is any valid access token, whatever its role. */
export type Access =
  | { kind: 'public' }
  | { kind: 'authenticated' }
  | { kind: 'actions'; actions: readonly Action[] };

export const publicAccess = { kind: 'public' } as const;
export const anyToken = { kind: 'authenticated' } as const;
export function requires(...actions: Action[]): Access {
  return { kind: 'actions', actions };
}

export interface AuthContext {
  organisationId: string;
  subjectId: string;
  role: Role;
  tokenId: string;
  /** The version of the app or user the token was issued for: a bumped or missing one ends the session. */
  tokenVersion: number;
}

type Schema = z.ZodType;
type Out<S> = S extends z.ZodType ? z.output<S> : undefined;
/** What a handler must return: what its `response` schema accepts, so the document cannot drift from the code. */
type Answer<R> = R extends z.ZodType ? z.input<R> : unknown;

const ACCEPTED = Symbol('accepted');

/** A 202 answer: work accepted and still under way; its body is the route's `accepted` schema. */
export interface Accepted {
  readonly [ACCEPTED]: true;
  readonly data: unknown;
}

export function acceptedAnswer(data: unknown): Accepted {
  return { [ACCEPTED]: true, data };
}

export function isAccepted(value: unknown): value is Accepted {
  return typeof value === 'object' && value !== null && ACCEPTED in value;
}

export interface RouteContext<P, Q, B, A = undefined> {
  params: Out<P>;
  query: Out<Q>;
  body: Out<B>;
  /** Undefined only on public routes. */
  auth: AuthContext;
  req: Request;
  res: Response;
  /** Answer with another success status than the route's own, e.g. 200 for an idempotent replay of a create. */
  setSuccessStatus: (status: 200 | 201) => void;
  /** Answer 202 with `data` (what the route's `accepted` schema documents) instead of the success answer. */
  accepted: (data: Answer<A>) => Accepted;
}

export interface RouteSpec<
  P extends Schema | undefined,
  Q extends Schema | undefined,
  B extends Schema | undefined,
  R extends Schema | undefined = Schema | undefined,
  A extends Schema | undefined = Schema | undefined,
> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI style: `/customers/{id}`. */
  path: string;
  summary: string;
  tag: string;
  access: Access;
  params?: P;
  query?: Q;
  body?: B;
  /** Schema of the envelope's `data`: the OpenAPI document's, and the type the handler must return. */
  response?: R;
  /** 201 for creates; 200 otherwise. */
  successStatus?: 200 | 201;
  /** Schema of a 202 answer's `data`, for a route that may answer before its work is done. */
  accepted?: A;
  /** Middleware run before validation, e.g. a route's own rate limiter. */
  before?: RequestHandler[];
  /**
   * The route keeps its Idempotency-Key in its own table, beside what it creates, with the same rules
   * (`POST /payments`: a concurrent retry waits for the first and replays it; a deleted payment's key
   * stays spent), so the generic store stays out of its way.
   */
  ownIdempotency?: true;
  /**
   * A body array whose items the handler judges one by one, text that Postgres cannot store included
   * (a usage batch's `events`): the edge check of such text skips it.
   */
  itemsJudgedAlone?: string;
  /** Set when the handler writes the response itself (downloads, documents). */
  rawResponse?: { contentType: string };
  handler: (ctx: RouteContext<P, Q, B, A>) => Promise<NoInfer<Answer<R>> | Accepted>;
}

export type Route = RouteSpec<Schema | undefined, Schema | undefined, Schema | undefined, Schema | undefined, Schema | undefined>;

export function defineRoute<
  P extends Schema | undefined = undefined,
  Q extends Schema | undefined = undefined,
  B extends Schema | undefined = undefined,
  R extends Schema | undefined = undefined,
  A extends Schema | undefined = undefined,
>(spec: RouteSpec<P, Q, B, R, A>): Route {
  return spec as unknown as Route;
}

/** `/customers/{id}` → `/customers/:id` */
export function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/**
 * A route that takes no body: an authenticated write with no body schema and no body handler of its own
 * (an upload's parser). It takes none or `{}`: a property sent to it would be dropped unseen, so it is
 * refused by its path, as a closed body's unknown property is.
 */
export function takesNoBody(route: Route): boolean {
  return route.method !== 'get' && route.body === undefined && route.before === undefined && route.access.kind !== 'public';
}
