import fs from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';

/** Where uploaded documents live; a cloud bucket can implement the same three calls. */
export interface FileStorage {
  put(key: string, content: Buffer): Promise<void>;
  read(key: string): Readable;
  remove(key: string): Promise<void>;
}

/** The default: files under a root directory; keys are relative paths made by the API, never by callers. */
export function createFilesystemStorage(root: string): FileStorage {
  const resolve = (key: string) => {
    const file = path.resolve(root, key);
    if (!file.startsWith(path.resolve(root) + path.sep)) throw new Error(`storage key escapes the root: ${key}`);
    return file;
  };
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
    async remove(key) {
      await fs.rm(resolve(key), { force: true });
    },
  };
}
