import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/temporal/dev-server';
import { startTestApi, type TestApi } from './support/harness';

/**
 * Runs docs/quick-start.md as written, in order, against the started stack, so that the guide stays true.
 * The guide's conventions (stated in it): a ```sh block followed at once by a ```json block is a step, the
 * JSON being (the relevant part of) its answer; in an answer, "$NAME" is a value kept for later commands
 * (captured where it first appears, the same value wherever it appears again), "…" any value, "abc_…" a
 * text starting "abc_", and a last array item "…" more items; fields not shown are not checked. A step
 * whose command is a GET is repeated until its answer matches (the guide says to repeat it), for 30 s at
 * most. `$API` is the test API's address, and the receiver's port 4000 a free port. Values are compared as
 * the JSON texts they are, so a change of decimal formatting fails naming each field, e.g.
 * `data.total: shown as "121.38", answered "121.380"`: update the guide's answers with it.
 */

const ROOT = path.resolve(__dirname, '../..');
const GUIDE = path.join(ROOT, 'docs/quick-start.md');
const GUIDE_RECEIVER_PORT = '4000';

interface Block {
  info: string;
  text: string;
  line: number;
}

/** The fenced blocks of a Markdown text, in order, with their info string and first line number. */
function fencedBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++) body.push(lines[i]!);
    blocks.push({ info: open[1]!, text: body.join('\n'), line: start + 1 });
  }
  return blocks;
}

type Vars = Map<string, string>;

const expand = (text: string, vars: Vars) =>
  text.replace(/\$\{?([A-Z_][A-Z0-9_]*)\}?/g, (whole, name: string) => {
    const value = vars.get(name);
    if (value === undefined) throw new Error(`the guide uses $${name} before an answer defines it`);
    return value;
  });

/** Words of a shell command as the shell would split them: quotes, `$VAR` expansion outside single quotes. */
function shellWords(command: string, vars: Vars): string[] {
  const words: string[] = [];
  let word: string | null = null;
  const text = command.replace(/\\\n/g, ' ');
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      word = (word ?? '') + text.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      const end = text.indexOf('"', i + 1);
      word = (word ?? '') + expand(text.slice(i + 1, end), vars);
      i = end;
    } else {
      const bare = /^[^\s'"]+/.exec(text.slice(i))![0];
      word = (word ?? '') + expand(bare, vars);
      i += bare.length - 1;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

interface HttpCall {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/** A `curl` command of the guide: `-X`, `-H`, `-d '…'` or `-d @-` with a here-document (`<<EOF`, expanded). */
function curlCall(command: string, vars: Vars): HttpCall {
  const heredoc = /<<EOF\n([\s\S]*?)\nEOF\s*$/.exec(command);
  const words = shellWords(heredoc ? command.slice(0, heredoc.index) : command, vars);
  if (words[0] !== 'curl') throw new Error(`not a curl command: ${command}`);
  const call: HttpCall = { method: '', url: '', headers: {} };
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    if (word === '-s') continue;
    else if (word === '-X') call.method = words[++i]!;
    else if (word === '-H') {
      const [name, ...value] = words[++i]!.split(':');
      call.headers[name!.trim().toLowerCase()] = value.join(':').trim();
    } else if (word === '-d') {
      const data = words[++i]!;
      call.body = data === '@-' ? expand(heredoc![1]!, vars) : data;
    } else if (word.startsWith('-')) throw new Error(`the guide's curl uses ${word}, which this test does not read`);
    else call.url = word;
  }
  call.method ||= call.body === undefined ? 'GET' : 'POST';
  return call;
}

/** Where an answer differs from what the guide shows; captures the guide's `$NAME`s into `vars`. */
function differences(shown: unknown, actual: unknown, vars: Vars, at = ''): string[] {
  const here = at || '(the answer)';
  if (typeof shown === 'string') {
    const variable = /^\$([A-Z_][A-Z0-9_]*)$/.exec(shown);
    if (variable) {
      if (typeof actual !== 'string' && typeof actual !== 'number') return [`${here}: shown as ${shown}, answered ${JSON.stringify(actual)}`];
      const known = vars.get(variable[1]!);
      if (known === undefined) vars.set(variable[1]!, String(actual));
      else if (known !== String(actual)) return [`${here}: shown as ${shown} (${known}), answered ${JSON.stringify(actual)}`];
      return [];
    }
    if (shown === '…') return actual === undefined ? [`${here}: shown, but not answered`] : [];
    if (shown.endsWith('…')) {
      return typeof actual === 'string' && actual.startsWith(expand(shown.slice(0, -1), vars)) ? [] : [`${here}: shown as ${JSON.stringify(shown)}, answered ${JSON.stringify(actual)}`];
    }
    const text = expand(shown, vars);
    return actual === text ? [] : [`${here}: shown as ${JSON.stringify(text)}, answered ${JSON.stringify(actual)}`];
  }
  if (Array.isArray(shown)) {
    if (!Array.isArray(actual)) return [`${here}: shown as an array, answered ${JSON.stringify(actual)}`];
    const open = shown.at(-1) === '…';
    const items = open ? shown.slice(0, -1) : shown;
    if (open ? actual.length < items.length : actual.length !== items.length) {
      return [`${here}: shown with ${items.length}${open ? ' or more' : ''} items, answered ${actual.length}: ${JSON.stringify(actual)}`];
    }
    return items.flatMap((item, index) => differences(item, actual[index], vars, `${at}[${index}]`));
  }
  if (shown !== null && typeof shown === 'object') {
    if (actual === null || typeof actual !== 'object') return [`${here}: shown as an object, answered ${JSON.stringify(actual)}`];
    return Object.entries(shown).flatMap(([key, value]) => differences(value, (actual as Record<string, unknown>)[key], vars, at ? `${at}.${key}` : key));
  }
  return shown === actual ? [] : [`${here}: shown as ${JSON.stringify(shown)}, answered ${JSON.stringify(actual)}`];
}

/** Compares an answer with the guide's; on a match, keeps the values it captured. */
function matches(shown: unknown, actual: unknown, vars: Vars): string[] {
  const trial = new Map(vars);
  const found = differences(shown, actual, trial);
  if (found.length === 0) for (const [name, value] of trial) vars.set(name, value);
  return found;
}

async function callApi(call: HttpCall): Promise<unknown> {
  const response = await fetch(call.url, { method: call.method, headers: call.headers, body: call.body });
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** `npm run --silent bootstrap -- …`, run as the script itself against the test database: its one line of JSON. */
function bootstrap(command: string, vars: Vars): unknown {
  const words = shellWords(command, vars);
  expect(words.slice(0, 5)).toEqual(['npm', 'run', '--silent', 'bootstrap', '--']);
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/main/bootstrap.ts', ...words.slice(5)], { cwd: ROOT, env: process.env, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`bootstrap failed: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

let api: TestApi;
let work: string;
let receiver: ChildProcess | undefined;
let receiverOutput = '';

beforeAll(async () => {
  api = await startTestApi();
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'quick-start-'));
  // The guide's receiver imports `standardwebhooks` as an integrator's project would, from its node_modules.
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(work, 'node_modules'), 'dir');
});
afterAll(async () => {
  receiver?.kill('SIGTERM');
  await api.close();
  fs.rmSync(work, { recursive: true, force: true });
});

/** Starts the guide's receiver (its ```js block saved as receiver.mjs) as the guide's command says. */
async function startReceiver(command: string, blocks: Block[], vars: Vars): Promise<void> {
  const source = blocks.find((block) => block.info === 'js' && block.text.startsWith('// receiver.mjs'));
  if (!source) throw new Error('the guide has no ```js block starting "// receiver.mjs"');
  fs.writeFileSync(path.join(work, 'receiver.mjs'), source.text);
  const words = shellWords(command, vars);
  const env: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(words[0]!)) {
    const [name, ...value] = words.shift()!.split('=');
    env[name!] = value.join('=');
  }
  expect(words).toEqual(['node', 'receiver.mjs']);
  receiver = spawn(process.execPath, ['receiver.mjs'], { cwd: work, env: { ...process.env, ...env } });
  receiver.stdout!.on('data', (chunk: Buffer) => (receiverOutput += chunk.toString()));
  receiver.stderr!.on('data', (chunk: Buffer) => (receiverOutput += chunk.toString()));
  const deadline = Date.now() + 15_000;
  while (!receiverOutput.includes('listening')) {
    if (Date.now() > deadline || receiver.exitCode !== null) throw new Error(`the guide's receiver did not start: ${receiverOutput}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until the receiver has printed each line the guide shows it printing. */
async function receiverPrinted(lines: string[], vars: Vars): Promise<void> {
  const patterns = lines.map((line) => new RegExp(`^${expand(line, vars).split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('\\S+')}$`, 'm'));
  const deadline = Date.now() + 60_000;
  while (!patterns.every((pattern) => pattern.test(receiverOutput))) {
    if (Date.now() > deadline) throw new Error(`the receiver printed:\n${receiverOutput}\nthe guide shows:\n${lines.join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('docs/quick-start.md', () => {
  it('when every request of the guide is sent in order, then each answer is what the guide shows, and the receiver it shows verifies the webhooks it is sent', async () => {
    const blocks = fencedBlocks(fs.readFileSync(GUIDE, 'utf8'));
    const receiverPort = String(await freePort());
    const vars: Vars = new Map([['API', api.url]]);
    let steps = 0;
    for (const [index, block] of blocks.entries()) {
      if (block.info !== 'sh') {
        if (block.info === 'text' && block.text.startsWith('verified ')) await receiverPrinted(block.text.split('\n'), vars);
        continue;
      }
      const onReceiverPort = (text: string) => text.replaceAll(`127.0.0.1:${GUIDE_RECEIVER_PORT}`, `127.0.0.1:${receiverPort}`);
      const command = onReceiverPort(block.text).replace(`PORT=${GUIDE_RECEIVER_PORT}`, `PORT=${receiverPort}`);
      if (/(^|\s)node receiver\.mjs$/.test(command)) await startReceiver(command, blocks, vars);
      const answer = blocks[index + 1];
      if (answer?.info !== 'json') continue;
      steps += 1;
      const shown: unknown = JSON.parse(onReceiverPort(answer.text));
      const where = `docs/quick-start.md line ${block.line}`;
      if (command.startsWith('npm run --silent bootstrap')) {
        expect([where, matches(shown, bootstrap(command, vars), vars)]).toEqual([where, []]);
        continue;
      }
      const call = curlCall(command, vars);
      const deadline = Date.now() + (call.method === 'GET' ? 30_000 : 0);
      for (;;) {
        const actual = await callApi(call);
        const found = matches(shown, actual, vars);
        if (found.length === 0) break;
        if (Date.now() >= deadline) {
          throw new Error(`${where}: ${call.method} ${call.url} answered other than the guide shows:\n  ${found.join('\n  ')}\nwhole answer: ${JSON.stringify(actual, null, 2)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    // The guide's own walk: bootstrap, logins, customer to contract, usage, preview, run, raise, send, paid, webhooks.
    expect(steps).toBeGreaterThanOrEqual(20);
    expect(receiverOutput).not.toMatch(/^refused/m);
  });
});
