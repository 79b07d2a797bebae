/**
 * `npm run build`: the production build in dist/. Starts from an empty dist/ (so that no file of an
 * earlier build, such as a removed migration, survives), compiles with tsconfig.build.json, then bundles
 * the workflow code once, so that the compiled worker does not bundle at every start.
 *
 *   dist/src/main/*.js          entry points: api, worker, migrate, bootstrap
 *   dist/src/mail/render-worker.js   the template render thread, copied as it is
 *   dist/src/modules/invoices/fonts/ the fonts invoice PDFs embed, copied as they are
 *   dist/{activities,workflows,migrations}/
 *   dist/workflow-bundle.js     the workflow bundle the compiled worker loads (src/temporal/worker.ts)
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

const ROOT = path.resolve(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const WORKFLOW_BUNDLE = path.join(DIST, 'workflow-bundle.js');

function compile(): void {
  const tsc = require.resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed (${result.status ?? result.signal})`);
}

/**
 * Files the compiler does not emit but that belong beside what it does: the ISO 3166 licence, the
 * template render thread, plain JavaScript that src/mail/templating.ts starts from its own directory, and
 * the fonts invoice PDFs embed (src/modules/invoices/fonts, read from beside invoice-pdf.ts).
 */
function copyAssets(): void {
  const fonts = fs.readdirSync(path.join(ROOT, 'src/modules/invoices/fonts')).map((file) => `src/modules/invoices/fonts/${file}`);
  for (const asset of ['src/modules/geography/data/LICENSE-iso-3166', 'src/mail/render-worker.js', ...fonts]) {
    fs.mkdirSync(path.dirname(path.join(DIST, asset)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, asset), path.join(DIST, asset));
  }
}

async function bundleWorkflows(): Promise<void> {
  // The same sources and bundler the worker uses when it runs from TypeScript.
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows') });
  fs.writeFileSync(WORKFLOW_BUNDLE, code);
  process.stderr.write(`workflow bundle: ${path.relative(ROOT, WORKFLOW_BUNDLE)} (${Math.round(code.length / 1024)} KiB)\n`);
}

async function main(): Promise<void> {
  fs.rmSync(DIST, { recursive: true, force: true });
  compile();
  copyAssets();
  await bundleWorkflows();
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
