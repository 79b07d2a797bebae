import { spawnSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');

interface LintResult {
  filePath: string;
  messages: Array<{ ruleId: string | null; message: string }>;
}

/** The project's own ESLint configuration, run the way `npm run lint` runs it. */
function eslint(args: string[], input?: string): LintResult[] {
  const run = spawnSync(path.join(root, 'node_modules/.bin/eslint'), [...args, '--format', 'json'], { cwd: root, input, encoding: 'utf8' });
  return JSON.parse(run.stdout) as LintResult[];
}

describe('the import rules', () => {
  jest.setTimeout(30_000);

  it('when two files import each other, then lint fails on both with a dependency cycle', () => {
    const results = eslint(['--no-ignore', 'test/unit/fixtures/import-cycle']);
    expect(results).toHaveLength(2);
    for (const result of results) {
      expect(result.messages.map((message) => message.ruleId)).toContain('import-x/no-cycle');
    }
  });

  it('when domain code imports a module, the database, the HTTP layer or a Node built-in, then lint fails', () => {
    const [result] = eslint(
      ['--stdin', '--stdin-filename', 'src/domain/probe.ts'],
      [
        "import fs from 'node:fs';",
        "import { createInvoiceRepository } from '../modules/invoices/invoices.repository';",
        "import { createDb } from '../db/knex';",
        "import { sendError } from '../http/envelope';",
        'export const used = [fs, createInvoiceRepository, createDb, sendError];',
      ].join('\n'),
    );
    expect(result!.messages.map((message) => message.message)).toEqual([
      expect.stringContaining("'node:fs' import is restricted"),
      expect.stringContaining('src/domain imports only src/domain'),
      expect.stringContaining('src/domain imports only src/domain'),
      expect.stringContaining('src/domain imports only src/domain'),
    ]);
  });

  it('when code outside the rating engine imports the pricing of plan items, then lint fails', () => {
    const [result] = eslint(
      ['--stdin', '--stdin-filename', 'src/modules/invoices/probe.ts'],
      ["import { priceItem, validatePlanItemPricing } from '../../domain/pricing';", 'export const used = [priceItem, validatePlanItemPricing];'].join('\n'),
    );
    expect(result!.messages.map((message) => message.message)).toEqual([expect.stringContaining('priced by the rating engine (src/domain/rating.ts) alone')]);
  });

  it('when application code loads Handlebars itself, then lint fails: templates render in a render thread, within their budget', () => {
    const [result] = eslint(['--stdin', '--stdin-filename', 'src/modules/emails/probe.ts'], ["import Handlebars from 'handlebars';", 'export const used = Handlebars;'].join('\n'));
    expect(result!.messages.map((message) => message.message)).toEqual([expect.stringContaining('use the TemplateRenderer of src/mail/templating.ts')]);
  });

  it('when a workflow imports a module, even for a type, then lint fails', () => {
    const [result] = eslint(
      ['--stdin', '--stdin-filename', 'workflows/probe.workflow.ts'],
      ["import type { Invoice } from '../src/modules/invoices/invoices.repository';", 'export type Used = Invoice;'].join('\n'),
    );
    expect(result!.messages.map((message) => message.message)).toEqual([expect.stringContaining('never the modules behind them')]);
  });

  it("when a module reaches past another's face, code outside reaches past a face, a module imports workflow code, or type imports make a circle, then the structure check fails on each", () => {
    const fixture = path.join(root, 'test/unit/fixtures/module-rules');
    const run = spawnSync(path.join(root, 'node_modules/.bin/depcruise'), ['src', 'workflows', '--config', path.join(root, '.dependency-cruiser.cjs'), '--output-type', 'json'], {
      cwd: fixture,
      encoding: 'utf8',
    });
    const violations = (JSON.parse(run.stdout) as { summary: { violations: Array<{ rule: { name: string }; from: string; to: string }> } }).summary.violations;
    expect(violations.map((violation) => [violation.rule.name, violation.from, violation.to]).sort()).toEqual([
      ['module-face', 'src/modules/billing/billing.service.ts', 'src/modules/ledger/ledger.repository.ts'],
      ['module-face-from-outside', 'src/composition.ts', 'src/modules/ledger/ledger.repository.ts'],
      ['no-circular', 'src/modules/notes/draft.ts', 'src/modules/notes/issued.ts'],
      ['workflows-below-modules', 'src/modules/notes/note.service.ts', 'workflows/note.workflow.ts'],
    ]);
    // The imports through the faces themselves pass.
    expect(violations.filter((violation) => violation.to.endsWith('/index.ts'))).toEqual([]);
  });
  it('when the project itself is checked, then its structure has no violation', () => {
    const run = spawnSync(path.join(root, 'node_modules/.bin/depcruise'), ['src', 'activities', 'workflows', '--config', '.dependency-cruiser.cjs', '--output-type', 'err'], { cwd: root, encoding: 'utf8' });
    expect({ status: run.status, output: run.stdout.trim() }).toEqual({ status: 0, output: expect.stringContaining('no dependency violations found') });
  });
});
