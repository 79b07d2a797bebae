export type DomainErrorCode = 'unknown_currency' | 'invalid_amount' | 'invalid_pricing' | 'invalid_fx_rate';

/** A rule of the domain was broken by the input; callers map it to a 400. */
export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}
