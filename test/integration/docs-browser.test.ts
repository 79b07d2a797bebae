import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { startTestApi, type TestApi } from './support/harness';

const ARTIFACTS = path.resolve(__dirname, '../../test-artifacts');

let api: TestApi;
let browser: Browser;

beforeAll(async () => {
  api = await startTestApi();
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
});

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

it('when /docs is opened in a browser, then Swagger UI lists the operations and shows no error', async () => {
  const page = await browser.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(`${api.url}/docs/`);
  await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
  // Swagger UI renders the tags near the viewport only: scroll to the end, noting every operation shown.
  const listed = new Set<string>();
  const wanted = ['/auth/system-login', '/customers', '/events/batch', '/invoices/{id}/raise'];
  const last = page.locator('.opblock-summary-path[data-path="/objects/export"]');
  // A loaded machine renders behind the scrolling: a pass that missed an operation is followed by a slower one.
  for (let pass = 0; pass < 3 && !wanted.every((path) => listed.has(path)); pass += 1) {
    await page.evaluate('window.scrollTo(0, 0)');
    const atBottom = () => page.evaluate('window.scrollY + window.innerHeight >= document.body.scrollHeight - 2') as Promise<boolean>;
    for (let scrolls = 0; scrolls < 600 && ((await last.count()) === 0 || (pass > 0 && !(await atBottom()))); scrolls += 1) {
      for (const path of await page.locator('.opblock-summary-path').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-path')))) {
        if (path) listed.add(path);
      }
      await page.mouse.wheel(0, 1500 / (pass + 1));
      await page.waitForTimeout(50 * (pass + 1));
    }
    await last.waitFor({ timeout: 10_000 });
  }
  expect([...listed]).toEqual(expect.arrayContaining(wanted));
  await page.evaluate('window.scrollTo(0, 0)');
  await page.locator('.opblock-summary-path[data-path="/health"]').waitFor({ timeout: 10_000 });
  // The red box Swagger UI draws under the title when it cannot read the document (e.g. an unsupported schema dialect).
  expect(await page.locator('.errors-wrapper, .swagger-ui .errors').count()).toBe(0);
  expect(pageErrors).toEqual([]);

  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, 'docs.png'), fullPage: false });
  await page.close();
});
