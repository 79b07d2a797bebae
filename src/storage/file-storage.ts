import fs from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { InvariantError } from '../domain/errors';

/** A stored object's content, with its length for Content-Length. */
export interface StoredFile {
  content: Readable;
  size: number;
}

/**
 * How far a part-by-part upload got: recorded (in an activity's heartbeat) after each part, so that
 * another process can carry on from there. `uploadId` names the upload in the bucket; the filesystem
 * needs none.
 */
export interface UploadCheckpoint {
  uploadId?: string;
  parts: number;
  bytes: number;
}

/** A large object written part by part; readers see nothing until `complete`. */
export interface PartUpload {
  /** Every part but the last must hold at least this many bytes. */
  readonly minPartBytes: number;
  appendPart(content: Buffer): Promise<void>;
  /** What the parts appended so far need to be resumed after a crash. */
  checkpoint(): UploadCheckpoint;
  complete(): Promise<void>;
  abort(): Promise<void>;
}

/**
 * Where files live: uploaded documents and export CSVs. Keys are relative paths made by the code, never by
 * callers, and stay inside the storage's area.
 */
export interface FileStorage {
  put(key: string, content: Buffer): Promise<void>;
  /** The content of an object whose size the caller knows; a missing object errors the stream. */
  read(key: string): Readable;
  /** The content and size of an object, or undefined when there is none. */
  open(key: string): Promise<StoredFile | undefined>;
  remove(key: string): Promise<void>;
  startUpload(key: string, contentType: string): Promise<PartUpload>;
  /** Carries on an upload from its checkpoint; undefined when that upload is gone (another machine's disk, expired). */
  resumeUpload(key: string, from: UploadCheckpoint): Promise<PartUpload | undefined>;
}

/** Refuses absolute keys and `.`/`..` segments, so a key cannot leave its area. */
export function checkedKey(key: string): string {
  const segments = key.split('/');
  if (segments.some((segment) => segment === '' || segment === '.' || segment === '..' || segment.includes('\\'))) {
    throw new InvariantError(`invalid storage key: ${key}`);
  }
  return key;
}

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/** The default: files under a root directory. */
export function createFilesystemStorage(root: string): FileStorage {
  const resolve = (key: string) => path.resolve(root, checkedKey(key));

  /** Parts are appended to `<file>.partial`, renamed into place on completion. */
  function partUpload(file: string, from: UploadCheckpoint): PartUpload {
    let { parts, bytes } = from;
    return {
      // A file can grow by any amount: every page is a part, and every page is a checkpoint.
      minPartBytes: 1,
      async appendPart(content) {
        await fs.appendFile(`${file}.partial`, content);
        parts += 1;
        bytes += content.length;
      },
      checkpoint: () => ({ parts, bytes }),
      async complete() {
        await fs.rename(`${file}.partial`, file);
      },
      async abort() {
        await fs.rm(`${file}.partial`, { force: true });
      },
    };
  }

  return {
    async put(key, content) {
      const file = resolve(key);
      await fs.mkdir(path.dirname(file), { recursive: true });
      // Write then rename, so a reader never sees half a file.
      await fs.writeFile(`${file}.partial`, content);
      await fs.rename(`${file}.partial`, file);
    },
    read(key) {
      return createReadStream(resolve(key));
    },
    async open(key) {
      const file = resolve(key);
      try {
        const { size } = await fs.stat(file);
        return { content: createReadStream(file), size };
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    },
    async remove(key) {
      await fs.rm(resolve(key), { force: true });
    },
    async startUpload(key) {
      const file = resolve(key);
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(`${file}.partial`, '');
      return partUpload(file, { parts: 0, bytes: 0 });
    },
    async resumeUpload(key, from) {
      const file = resolve(key);
      try {
        const { size } = await fs.stat(`${file}.partial`);
        if (size < from.bytes) return undefined;
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
      // Whatever was written after the checkpoint is written again.
      await fs.truncate(`${file}.partial`, from.bytes);
      return partUpload(file, from);
    },
  };
}
