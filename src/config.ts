import { z } from 'zod';
import { parseAllowedDestinations } from './security/allowed-destinations';

/**
 * The only reader of process.env. Every process parses its configuration once at start-up; a missing or
 * bad value stops it with a message naming the variable.
 */
const booleanFromEnv = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATA_DIR: z.string().default('.data'),
  DATABASE_URL: z.string().url().optional(),
  EMBEDDED_POSTGRES_PORT: z.coerce.number().int().min(1).max(65535).default(5488),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /** The API's longest wait on one statement: a Postgres that stops answering on an open connection is then a 503, never a hung request. */
  API_DATABASE_QUERY_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(30_000),
  DATABASE_PREPARED_STATEMENTS: booleanFromEnv.default(true),
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).max(200).default('billing'),
  // The task queues of webhook deliveries and of chatbot conversations; unset, TEMPORAL_TASK_QUEUE followed by
  // `-webhooks` and `-chatbot`. The worker serves every queue; naming the main queue puts them back on it.
  TEMPORAL_WEBHOOK_TASK_QUEUE: z.string().min(1).max(200).optional(),
  TEMPORAL_CHATBOT_TASK_QUEUE: z.string().min(1).max(200).optional(),
  TEMPORAL_TLS: booleanFromEnv.default(false),
  TEMPORAL_TLS_CERT_PATH: z.string().optional(),
  TEMPORAL_TLS_KEY_PATH: z.string().optional(),
  TEMPORAL_API_KEY: z.string().optional(),
  WORKER_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().min(1).max(1000).default(50),
  // How long a stopping worker lets its running activities finish before cancelling them.
  WORKER_SHUTDOWN_GRACE_SECONDS: z.coerce.number().int().min(0).max(3600).default(30),
  // A workflow bundle made beforehand (bundleWorkflowCode's code, written to a file) that the worker runs
  // instead of bundling workflows/ at its start (from the sources) or loading dist/workflow-bundle.js (compiled).
  WORKFLOW_BUNDLE_PATH: z.string().min(1).optional(),
  // Contracts an invoice run bills together in one transaction, and how many such pages run at once.
  INVOICE_RUN_PAGE_SIZE: z.coerce.number().int().min(1).max(5000).default(1000),
  // Destinations webhooks may reach in production even though they are private or plain http: comma-separated
  // `host:port` entries (a bare host means port 443); only that host on that port is exempt.
  WEBHOOK_ALLOWED_HOSTS: z
    .string()
    .default('')
    .superRefine((value, context) => {
      for (const problem of parseAllowedDestinations(value).problems) context.addIssue({ code: 'custom', message: problem });
    }),
  // Whether this worker relays the webhook outbox (every worker may; they share the events).
  WEBHOOK_RELAY: booleanFromEnv.default(true),
  // How long the relay lets `usage.ingested` events gather before handing them on together (0: at once).
  USAGE_EVENTS_GATHER_MS: z.coerce.number().int().min(0).max(10_000).default(750),
  INVOICE_RUN_PAGES_IN_FLIGHT: z.coerce.number().int().min(1).max(16).default(2),
  TEMPORAL_CLI_PATH: z.string().optional(),
  // Searched for the `temporal` binary when TEMPORAL_CLI_PATH is unset.
  PATH: z.string().default(''),
  TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),
  TEMPORAL_PORT: z.coerce.number().int().min(1).max(65535).default(7233),
  SMTP_URL: z.string().url().optional(),
  MAIL_FROM: z.string().default('billing@localhost'),
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  // Seals secrets at rest (AES-256-GCM); the previous keys, comma-separated, still open what they sealed.
  SECRETS_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  SECRETS_KEYS_PREVIOUS: z
    .string()
    .optional()
    .transform((value) => (value ? value.split(',').map((key) => key.trim()).filter(Boolean) : []))
    .refine((keys) => keys.every((key) => key.length >= 32), 'each key must be at least 32 characters'),
  ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(3600).default(900),
  REFRESH_TOKEN_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  LOGIN_MAX_FAILURES: z.coerce.number().int().min(1).default(10),
  LOGIN_FAILURE_WINDOW_SECONDS: z.coerce.number().int().min(1).default(900),
  // Failed logins from one address across every identifier, in the same window.
  LOGIN_MAX_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1).default(30),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(6000),
  // Questions to the chatbot a minute, per app or user.
  CHATBOT_MESSAGES_PER_MINUTE: z.coerce.number().int().min(1).default(30),
  // A conversation's workflow ends after this many seconds without a question; the next question starts it again.
  CHATBOT_IDLE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  // The chatbot's language model, opt-in: an OpenAI-compatible server's base URL (…/v1) and model name; both set, the model answers.
  CHATBOT_LLM_BASE_URL: z.string().url().optional(),
  /** Where the Stripe adapter sends its calls: Stripe's API, or a local stand-in in development and tests. */
  STRIPE_API_BASE: z.string().url().default('https://api.stripe.com'),
  STRIPE_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(120_000).default(30_000),
  CHATBOT_LLM_MODEL: z.string().min(1).max(200).optional(),
  CHATBOT_LLM_API_KEY: z.string().min(1).optional(),
  UPLOAD_LIMIT_BYTES: z.coerce.number().int().min(1024).default(10 * 1024 * 1024),
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(5 * 1024 * 1024),
  // The budget of one e-mail template render (POST /emails, a template saved, invoice mail, reminders), run in a
  // worker thread: the time it may take, the bytes of its parts together, its thread's heap, and render threads
  // at most per process. Past a limit it answers 422 (in an activity: a non-retryable failure).
  TEMPLATE_RENDER_TIMEOUT_MS: z.coerce.number().int().min(10).max(60_000).default(500),
  TEMPLATE_OUTPUT_LIMIT_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  TEMPLATE_RENDER_MEMORY_MB: z.coerce.number().int().min(16).max(4096).default(64),
  TEMPLATE_RENDER_THREADS: z.coerce.number().int().min(1).max(64).default(2),
  // Deepest nesting of arrays and objects a JSON body may have.
  JSON_MAX_DEPTH: z.coerce.number().int().min(4).max(1000).default(32),
  // Whether X-Forwarded-For names the client: off unless a proxy you run sits in front.
  // `true` trusts every hop; a number trusts that many hops; otherwise a comma-separated list of addresses or subnets.
  TRUST_PROXY: z.string().default('false'),
  // Ingestion workflows per organisation: its batches are spread over them by a hash of the batch id, so that
  // one organisation's ingestion is not bound to one workflow writing one group at a time. Read by the API.
  USAGE_INGESTION_SHARDS: z.coerce.number().int().min(1).max(64).default(1),
  // Where rate-limit counters live: this process's memory, or Postgres, shared by every API replica.
  RATE_LIMIT_STORE: z.enum(['memory', 'postgres']).default('memory'),
  // Where uploaded files and generated PDFs live: a directory under DATA_DIR, or an S3-compatible bucket.
  STORAGE_DRIVER: z.enum(['filesystem', 's3']).default('filesystem'),
  S3_BUCKET: z.string().optional(),
  S3_REGION: z.string().default('us-east-1'),
  S3_ENDPOINT: z.string().url().optional(),
  S3_FORCE_PATH_STYLE: booleanFromEnv.default(false),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  // Where the metrics ports listen: the API's (METRICS_PORT) and the worker's (WORKER_METRICS_PORT). Never
  // the API's port: the metrics are for Prometheus on an internal network, not for clients.
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  // Port of the API's Prometheus endpoint; 0 turns it off. Unset: off for `npm run api`, 9464 under `npm start`.
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  // Port of the worker's Prometheus endpoint (Temporal SDK metrics and the process's own); 0 turns it off.
  // Unset: off for `npm run worker`, 9465 under `npm start`.
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  // How old the counts by status (invoices, usage batches) on the API's metrics may be before a scrape reads
  // them again; 0 reads them at every scrape.
  METRICS_COUNTS_MAX_AGE_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
  // How long the API waits for Temporal to start, signal or query a workflow before it answers 503.
  TEMPORAL_CALL_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(4_000),
  // How long the API waits for a workflow Update (an invoice or contract transition, whose activities run
  // meanwhile) before it answers 503; a retry with the same Idempotency-Key picks up the Update's result.
  TEMPORAL_UPDATE_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(300_000).default(30_000),
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {}

/**
 * What stops a process, or the local stack `npm start` runs, from starting or stopping: a missing binary or
 * build output, a server that does not answer, bad command-line arguments. An operator's or developer's
 * to fix; never a request's answer.
 */
export class SetupError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SetupError';
  }
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings in .env files and compose files mean "unset".
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = configSchema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  return parsed.data;
}

/** Production processes cannot run on the laptop defaults: they need their dependencies named. */
export function requireSetting<K extends keyof Config>(config: Config, key: K): NonNullable<Config[K]> {
  const value = config[key];
  if (value === undefined || value === null) {
    throw new ConfigError(`Invalid configuration:\n  ${String(key)}: required`);
  }
  return value as NonNullable<Config[K]>;
}
