import { PassThrough, pipeline, type Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import { checkedKey, type FileStorage, type PartUpload, type UploadCheckpoint } from './file-storage';

/** S3's smallest part but the last: 5 MiB. At most 10,000 parts, so an export may reach about 50 GB. */
export const S3_MIN_PART_BYTES = 5 * 1024 * 1024;

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

const isNoSuchKey = (error: unknown) => (error as Error).name === 'NoSuchKey' || statusOf(error) === 404;
const isNoSuchUpload = (error: unknown) => (error as Error).name === 'NoSuchUpload' || statusOf(error) === 404;

/**
 * Objects in a bucket (AWS S3, MinIO or any S3-compatible store), under `prefix/`. Every process of a
 * deployment reads what any other wrote: the API serves what the worker exported.
 */
export function createS3Storage(options: { client: S3Client; bucket: string; prefix: string }): FileStorage {
  const { client, bucket } = options;
  const objectKey = (key: string) => `${options.prefix}/${checkedKey(key)}`;

  async function get(key: string) {
    try {
      return await client.send(new GetObjectCommand({ Bucket: bucket, Key: objectKey(key) }));
    } catch (error) {
      if (isNoSuchKey(error)) return undefined;
      throw error;
    }
  }

  /** The ETags of parts 1..count of an upload, or undefined when the upload no longer exists or lacks one. */
  async function uploadedParts(key: string, uploadId: string, count: number): Promise<CompletedPart[] | undefined> {
    const parts: CompletedPart[] = [];
    let marker: string | undefined;
    try {
      for (;;) {
        const page = await client.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumberMarker: marker }));
        for (const part of page.Parts ?? []) {
          if (part.PartNumber! <= count) parts.push({ PartNumber: part.PartNumber, ETag: part.ETag });
        }
        if (!page.IsTruncated || !page.NextPartNumberMarker) break;
        marker = page.NextPartNumberMarker;
      }
    } catch (error) {
      if (isNoSuchUpload(error)) return undefined;
      throw error;
    }
    parts.sort((a, b) => a.PartNumber! - b.PartNumber!);
    return parts.length === count ? parts : undefined;
  }

  /** A multipart upload. Parts past the checkpoint that a crashed attempt uploaded are overwritten, or left out of `complete`. */
  function partUpload(key: string, uploadId: string, from: { parts: CompletedPart[]; bytes: number }): PartUpload {
    const parts = [...from.parts];
    let bytes = from.bytes;
    const upload: PartUpload = {
      minPartBytes: S3_MIN_PART_BYTES,
      async appendPart(content) {
        const PartNumber = parts.length + 1;
        const { ETag } = await client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber, Body: content, ContentLength: content.length }));
        parts.push({ PartNumber, ETag });
        bytes += content.length;
      },
      checkpoint: () => ({ uploadId, parts: parts.length, bytes }),
      async complete() {
        // S3 refuses to complete an upload without parts: an empty object is one empty part.
        if (parts.length === 0) await upload.appendPart(Buffer.alloc(0));
        await client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }));
      },
      async abort() {
        await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
      },
    };
    return upload;
  }

  return {
    async put(key, content) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: objectKey(key), Body: content, ContentLength: content.length }));
    },
    read(key) {
      // The caller gets a stream at once; the object's bytes flow into it when S3 answers.
      const stream = new PassThrough();
      get(key).then(
        (object) => {
          if (!object) return stream.destroy(new Error(`no stored object ${key}`));
          // A failure midway destroys `stream` with the error, which is where the reader sees it.
          pipeline(object.Body as Readable, stream, () => {});
        },
        (error: unknown) => stream.destroy(error as Error),
      );
      return stream;
    },
    async open(key) {
      const object = await get(key);
      if (!object) return undefined;
      return { content: object.Body as Readable, size: object.ContentLength ?? 0 };
    },
    async remove(key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: objectKey(key) }));
    },
    async startUpload(key, contentType) {
      const Key = objectKey(key);
      const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key, ContentType: contentType }));
      return partUpload(Key, UploadId!, { parts: [], bytes: 0 });
    },
    async resumeUpload(key, from: UploadCheckpoint) {
      if (!from.uploadId) return undefined;
      const Key = objectKey(key);
      const parts = await uploadedParts(Key, from.uploadId, from.parts);
      return parts && partUpload(Key, from.uploadId, { parts, bytes: from.bytes });
    },
  };
}
