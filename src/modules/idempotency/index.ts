export { createIdempotencyService } from './idempotency.service';
export type { IdempotencyService } from './idempotency.service';
