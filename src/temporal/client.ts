import type { Knex } from 'knex';
import fs from 'node:fs';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import type { Config } from '../config';

export interface TemporalHandle {
  connection: Connection;
  client: Client;
  namespace: string;
  taskQueue: string;
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

/** One client per process. */
export async function connectTemporal(config: Config, address: string): Promise<TemporalHandle> {
  const connection = await Connection.connect(connectionOptions(config, address));
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  return { connection, client, namespace: config.TEMPORAL_NAMESPACE, taskQueue: config.TEMPORAL_TASK_QUEUE };
}
