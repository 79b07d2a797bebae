import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { requireSetting, type Config } from '../config';
import { createFilesystemStorage, type FileStorage } from './file-storage';
import { createS3Storage } from './s3-storage';

/** What each area holds: documents uploaded to invoices, and the CSVs of exports. */
export type StorageArea = 'invoice-files' | 'exports';

/**
 * One storage per area, on the driver the configuration names: directories under DATA_DIR (one machine),
 * or prefixes of one bucket, shared by every API and worker process.
 */
export function storagesFrom(config: Config): Record<StorageArea, FileStorage> {
  if (config.STORAGE_DRIVER === 'filesystem') {
    const under = (area: StorageArea) => createFilesystemStorage(path.resolve(config.DATA_DIR, area));
    return { 'invoice-files': under('invoice-files'), exports: under('exports') };
  }
  const bucket = requireSetting(config, 'S3_BUCKET');
  const client = new S3Client({
    region: config.S3_REGION,
    endpoint: config.S3_ENDPOINT,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    // Without keys, the SDK's default chain applies: an instance or task role, AWS_* variables, profiles.
    ...(config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY
      ? { credentials: { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY } }
      : {}),
  });
  const under = (area: StorageArea) => createS3Storage({ client, bucket, prefix: area });
  return { 'invoice-files': under('invoice-files'), exports: under('exports') };
}
