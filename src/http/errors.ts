/**
 * One error class for everything the API reports on purpose. `kind` decides the HTTP status and the
 * envelope's integer code through one exhaustive mapping.
 */
export type ErrorKind =
  | 'validation'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'rate_limited'
  | 'payload_too_large'
  | 'unavailable'
  | 'internal';

export interface ErrorItem {
  code: number | string;
  path?: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly items: ErrorItem[] = [],
  ) {
    super(message);
    this.name = 'AppError';
  }

  static notFound(what: string): AppError {
    return new AppError('not_found', `${what} not found`, [{ code: ERROR_CODES.not_found, message: `${what} not found` }]);
  }

  static conflict(message: string): AppError {
    return new AppError('conflict', message, [{ code: ERROR_CODES.conflict, message }]);
  }

  static validation(message: string, path?: string): AppError {
    return new AppError('validation', 'Validation failed', [{ code: ERROR_CODES.validation, path, message }]);
  }
}

export const ERROR_CODES = {
  validation: 1001,
  not_found: 1002,
  conflict: 1003,
  rate_limited: 1004,
  payload_too_large: 1005,
  unavailable: 1006,
} as const;

export function assertUnreachable(value: never): never {
  throw new Error(`Unhandled case: ${String(value)}`);
}

export function httpStatusOf(kind: ErrorKind): number {
  switch (kind) {
    case 'validation':
      return 400;
    case 'unauthorized':
      return 401;
    case 'forbidden':
      return 403;
    case 'not_found':
      return 404;
    case 'conflict':
      return 409;
    case 'payload_too_large':
      return 413;
    case 'rate_limited':
      return 429;
    case 'unavailable':
      return 503;
    case 'internal':
      return 500;
    default:
      return assertUnreachable(kind);
  }
}
