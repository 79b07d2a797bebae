import { ApplicationFailure } from '@temporalio/common';

/**
 * The one error model. Services, domain code and activities throw `AppError`; its `kind` fixes the HTTP
 * status and the envelope's integer code through the table below. Inside Temporal it travels as a
 * non-retryable `ApplicationFailure` whose `type` is the kind (`toApplicationFailure`), and the API turns
 * it back into an `AppError` with `fromApplicationFailure`.
 *
 * `retryable` says whether trying the same thing again can succeed: a validation or conflict never will,
 * a dependency that is down may.
 */
export const ERROR_KINDS = {
  internal: { status: 500, code: 1000, retryable: true },
  validation: { status: 400, code: 1001, retryable: false },
  not_found: { status: 404, code: 1002, retryable: false },
  conflict: { status: 409, code: 1003, retryable: false },
  rate_limited: { status: 429, code: 1004, retryable: true },
  payload_too_large: { status: 413, code: 1005, retryable: false },
  unavailable: { status: 503, code: 1006, retryable: true },
  unauthorized: { status: 401, code: 1007, retryable: false },
  forbidden: { status: 403, code: 1008, retryable: false },
  unsupported_media_type: { status: 415, code: 1009, retryable: false },
  method_not_allowed: { status: 405, code: 1010, retryable: false },
  // Well-formed input that cannot be processed within the service's limits: a template over its render budget.
  unprocessable: { status: 422, code: 1011, retryable: false },
  // An invoice in another currency than the organisation's base currency, with no FX rate effective on its date.
  fx_rate_missing: { status: 422, code: 1012, retryable: false },
} as const satisfies Record<string, { status: number; code: number; retryable: boolean }>;

export type ErrorKind = keyof typeof ERROR_KINDS;

export const ERROR_CODES = Object.fromEntries(Object.entries(ERROR_KINDS).map(([kind, entry]) => [kind, entry.code])) as {
  readonly [K in ErrorKind]: (typeof ERROR_KINDS)[K]['code'];
};

/**
 * Failure types a workflow must never retry: every kind that is not `retryable`. Activity retry
 * policies list these as `nonRetryableErrorTypes`.
 */
export const BUSINESS_FAILURE_TYPES: ErrorKind[] = (Object.keys(ERROR_KINDS) as ErrorKind[]).filter((kind) => !ERROR_KINDS[kind].retryable);

/** One item of the envelope's `errors`: the integer code (or the contract's string "27"), where, and why. */
export interface ErrorItem {
  code: number | string;
  path?: string;
  message: string;
}

export function isErrorKind(value: unknown): value is ErrorKind {
  return typeof value === 'string' && Object.hasOwn(ERROR_KINDS, value);
}

export class AppError extends Error {
  /**
   * Never empty, but for `forbidden`: an error without its own items carries one item made of its kind's
   * code and its message. A 403 says only `Forbidden`, with no items, as the interface contract fixes it.
   */
  readonly items: ErrorItem[];

  constructor(
    readonly kind: ErrorKind,
    message: string,
    items: ErrorItem[] = [],
  ) {
    super(message);
    this.name = 'AppError';
    this.items = items.length > 0 || kind === 'forbidden' ? items : [{ code: ERROR_KINDS[kind].code, message }];
  }

  get status(): number {
    return ERROR_KINDS[this.kind].status;
  }

  /** `path`: where the request named what was not found (`query.customerId`, `body.items.0.meterId`). */
  static notFound(what: string, path?: string): AppError {
    const message = `${what} not found`;
    return new AppError('not_found', message, path ? [{ code: ERROR_KINDS.not_found.code, path, message }] : []);
  }

  /** `path`: the part of the request the conflict is about (`body.name`, `headers.idempotency-key`). */
  static conflict(message: string, path?: string): AppError {
    return new AppError('conflict', message, path ? [{ code: ERROR_KINDS.conflict.code, path, message }] : []);
  }

  static validation(message: string, path?: string): AppError {
    return new AppError('validation', 'Validation failed', [{ code: ERROR_CODES.validation, ...(path ? { path } : {}), message }]);
  }

  /** Several problems found at once, each with its path. */
  static invalid(problems: ReadonlyArray<{ path?: string; message: string }>): AppError {
    return new AppError('validation', 'Validation failed', problems.map((problem) => ({ code: ERROR_CODES.validation, ...problem })));
  }

  static unavailable(message: string): AppError {
    return new AppError('unavailable', message);
  }

  /**
   * No `from`→`to` rate effective on `date`, which an invoice in `from` needs to be billed or previewed
   * (`to` is the organisation's base currency). The message says both ways out.
   */
  static missingFxRate(from: string, to: string, date: string): AppError {
    return new AppError(
      'fx_rate_missing',
      `No ${from}/${to} FX rate effective on ${date}: the organisation's base currency is ${to}. ` +
        `If ${from} is its base currency, set it in the organisation settings (PUT /organisation/settings {"baseCurrency": "${from}"}); ` +
        `otherwise add the rate (POST /fx-rates {"fromCurrency": "${from}", "toCurrency": "${to}", "rate": "<${to} per ${from}>", "effectiveDate": "${date}"})`,
    );
  }
}

/**
 * A rule of pure domain code broken by the input (an unknown currency, an amount or price that is not a
 * number, an FX rate not above zero): a validation error, which a service may re-throw with the path of
 * the input that broke it.
 */
export class DomainError extends AppError {
  constructor(message: string) {
    super('validation', message, [{ code: ERROR_CODES.validation, message }]);
    this.name = 'DomainError';
  }
}

/**
 * A fault of this program, never of its input or of a dependency: something it keeps true was found
 * broken (a count that must match, a module built without a part it needs). Not an `AppError`: a request
 * that meets one answers a plain 500 and the log has the message; inside Temporal it is retried like
 * any other fault.
 */
export class InvariantError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvariantError';
  }
}

/** The row, or a 404 for `what`: the one find-or-404. */
export function orNotFound<T>(row: T | null | undefined, what: string, path?: string): T {
  if (row === undefined || row === null) throw AppError.notFound(what, path);
  return row;
}

/** `AppError` → the failure Temporal carries: the kind as its `type`, the items as its details. */
export function toApplicationFailure(error: AppError): ApplicationFailure {
  return ApplicationFailure.create({ type: error.kind, message: error.message, nonRetryable: !ERROR_KINDS[error.kind].retryable, details: [error.items] });
}

/** The innermost `ApplicationFailure` of one of our kinds in a Temporal error's cause chain, as an `AppError`. */
export function fromApplicationFailure(error: unknown): AppError | undefined {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 8; depth += 1) {
    if (current instanceof ApplicationFailure && isErrorKind(current.type)) {
      const items = Array.isArray(current.details?.[0]) ? (current.details[0] as ErrorItem[]) : [];
      return new AppError(current.type, current.message, items);
    }
    current = current.cause;
  }
  return undefined;
}
