/** Error kinds raised as business failures (activities/failures.ts): retrying them cannot help. */
export const BUSINESS_FAILURE_TYPES = ['validation', 'not_found', 'conflict', 'forbidden'];
