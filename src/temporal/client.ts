import type { Knex } from 'knex';
import fs from 'node:fs';
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  isGrpcServiceError,
  makeGrpcRetryInterceptor,
  type ConnectionOptions,
} from '@temporalio/client';
import { AppError, ERROR_CODES } from '../domain/errors';
import type { Config } from '../config';
import { taskQueuesOf, type TaskQueues } from './task-queues';
import { createWorkflowsClient, type WorkflowsClient } from './workflows-client';

export interface TemporalHandle {
  connection: Connection;
  client: Client;
  /** Starts workflows, runs their Updates and Queries, by workflow type name (see workflows-client.ts). */
  workflows: WorkflowsClient;
  namespace: string;
  /** The main task queue (TEMPORAL_TASK_QUEUE): what /health and the Schedules use. */
  taskQueue: string;
  /** Every task queue; the typed client starts each workflow type on its own. */
  taskQueues: TaskQueues;
  /**
   * Runs Temporal client calls under a deadline: TEMPORAL_CALL_TIMEOUT_MS, TEMPORAL_UPDATE_TIMEOUT_MS for
   * `'update'` (an Update waits for its activities), or the milliseconds given. A Temporal that is down or
   * does not answer in time is a 503 `unavailable`, never a hang or a 500.
   */
  bounded<T>(calls: () => Promise<T>, deadline?: number | 'update'): Promise<T>;
}

/** What a service that starts or updates workflows needs: the database it reads, the client it drives. */
export interface WorkflowServiceDeps {
  db: Knex;
  temporal: TemporalHandle;
}

export function connectionOptions(config: Config, address: string): ConnectionOptions {
  const clientCert = config.TEMPORAL_TLS_CERT_PATH && config.TEMPORAL_TLS_KEY_PATH
    ? { crt: fs.readFileSync(config.TEMPORAL_TLS_CERT_PATH), key: fs.readFileSync(config.TEMPORAL_TLS_KEY_PATH) }
    : undefined;
  return {
    address,
    tls: config.TEMPORAL_TLS || clientCert ? { clientCertPair: clientCert } : undefined,
    apiKey: config.TEMPORAL_API_KEY,
  };
}

/** gRPC codes that mean "Temporal is not there or did not answer", as opposed to an answer: CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE. */
const UNREACHABLE = new Set<number>([1, 4, 14]);

/** Whether an error (or one of its causes) says Temporal could not be reached or did not answer in time. */
export function isTemporalUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 8; current = (current as { cause?: unknown }).cause, depth += 1) {
    if (isGrpcServiceError(current) && UNREACHABLE.has(current.code)) return true;
    const name = (current as { name?: unknown }).name;
    if (name === 'ConnectionError' || name === 'TransportError') return true;
  }
  return false;
}

export function temporalUnavailable(): AppError {
  return new AppError('unavailable', 'Service unavailable', [
    { code: ERROR_CODES.unavailable, path: 'temporal', message: 'Temporal did not answer in time; retry later, with the same Idempotency-Key' },
  ]);
}

/**
 * One client per process. The connection is lazy, so that the API starts (and answers 503 where it needs
 * Temporal) while Temporal is down. A few quick gRPC retries ride out a blip; the deadline of `bounded`
 * caps the whole call.
 */
export async function connectTemporal(config: Config, address: string): Promise<TemporalHandle> {
  const connection = Connection.lazy({
    ...connectionOptions(config, address),
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 4 }))],
  });
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  const taskQueues = taskQueuesOf(config);
  return {
    connection,
    client,
    workflows: createWorkflowsClient(client, taskQueues),
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: taskQueues.main,
    taskQueues,
    async bounded(calls, deadline = config.TEMPORAL_CALL_TIMEOUT_MS) {
      const ms = deadline === 'update' ? config.TEMPORAL_UPDATE_TIMEOUT_MS : deadline;
      try {
        return await connection.withDeadline(Date.now() + ms, calls);
      } catch (error) {
        if (isTemporalUnavailable(error)) throw temporalUnavailable();
        throw error;
      }
    },
  };
}
