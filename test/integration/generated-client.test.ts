import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBillingFixture, invoiceBody } from './support/billing-fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

/**
 * The served /openapi.json as an integrator uses it: types generated with openapi-typescript, a client
 * program on openapi-fetch compiled with `tsc --noEmit --strict` and run against the started stack; and
 * the document linted with Redocly's recommended rules (redocly.yaml).
 */
const root = path.resolve(__dirname, '../..');
const bin = (name: string) => path.join(root, 'node_modules', '.bin', name);
const CLIENT_PROGRAM = path.join(__dirname, 'client', 'billing-client.ts');

let api: TestApi;
let tenant: Tenant;
let workDir: string;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'generated-client');
  // Generated files live here, never in the repository; node_modules is the project's.
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'generated-client-'));
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(workDir, 'node_modules'), 'dir');
  const document = await fetch(`${api.url}/openapi.json`);
  expect(document.status).toBe(200);
  fs.writeFileSync(path.join(workDir, 'openapi.json'), await document.text());
});

afterAll(async () => {
  await api.close();
  fs.rmSync(workDir, { recursive: true, force: true });
});

/** Runs a command to its end without blocking the event loop, which serves the API under test. */
function run(command: string, args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: workDir, env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, output }));
  });
}

/** `tsc --noEmit --strict` over one program, with the lib checks on (the generated types are a .d.ts). */
const typecheck = (file: string) => run(bin('tsc'), ['--noEmit', '--strict', '--target', 'ES2022', '--module', 'commonjs', '--moduleResolution', 'node', '--types', 'node', file]);

describe('a TypeScript client generated from the served document', () => {
  it('when the types are generated and a client program is compiled under --strict and run, then it logs in, creates a customer, ingests a batch and reads an invoice', async () => {
    const generated = await run(bin('openapi-typescript'), ['openapi.json', '--output', 'api.d.ts']);
    expect({ status: generated.status, output: generated.status === 0 ? '' : generated.output }).toEqual({ status: 0, output: '' });
    fs.copyFileSync(CLIENT_PROGRAM, path.join(workDir, 'billing-client.ts'));
    const compiled = await typecheck('billing-client.ts');
    expect({ status: compiled.status, output: compiled.output }).toEqual({ status: 0, output: '' });

    const fixture = await createBillingFixture(api, tenant);
    const invoice = await api.http().post('/invoices').set(bearer(tenant.systemToken)).send(invoiceBody(fixture.contractPlanId)).expect(201);
    const ran = await run(bin('tsx'), ['billing-client.ts'], {
      BILLING_API_URL: api.url,
      BILLING_CLIENT_KEY: tenant.clientKey,
      BILLING_CLIENT_SECRET: tenant.clientSecret,
      BILLING_INVOICE_ID: invoice.body.data.id,
    });
    expect({ status: ran.status, output: ran.status === 0 ? '' : ran.output }).toEqual({ status: 0, output: '' });
    const result = JSON.parse(ran.stdout.trim().split('\n').pop()!);
    expect(result).toEqual({
      customer: { id: expect.stringMatching(/^cus_/), name: 'Typed Client Co' },
      batch: {
        summary: { success: 2, failed: 1, total: 3, duplicates: 0 },
        failedRecords: [{ index: 2, code: '27', statusCode: 400, error: 'value must be a decimal number with at most 20 digits before the point and 10 after it' }],
      },
      invoice: { id: invoice.body.data.id, status: 'draft', total: invoice.body.data.total, currency: 'USD' },
      missingInvoice: { status: 404, error: { status: 'error', message: expect.any(String), errors: [expect.objectContaining({ code: 1002 })] } },
    });
    // What the program did is in the database, under the organisation it logged in to.
    const customer = await api.db('customers').where({ id: result.customer.id }).first('organisation_id', 'name');
    expect(customer).toEqual({ organisation_id: tenant.organisationId, name: 'Typed Client Co' });
    const stored = await api.db('usage_events').where({ organisation_id: tenant.organisationId }).whereLike('event_id', `typed-${result.customer.id}-%`).orderBy('event_id').pluck('value');
    expect(stored.map(String).map(Number)).toEqual([3, 1.5]);

    // The body types are closed as the bodies are: a misspelt property does not compile. (openapi-fetch
    // infers its argument's type, so the check shows on a body declared with the generated type.)
    fs.writeFileSync(
      path.join(workDir, 'typo.ts'),
      [
        "import type { paths } from './api';",
        "type NewCustomer = paths['/customers']['post']['requestBody']['content']['application/json'];",
        "export const typo: NewCustomer = { name: 'Typo Co', emial: 'x@typo.test' };",
      ].join('\n'),
    );
    const typo = await typecheck('typo.ts');
    expect(typo.status).not.toBe(0);
    expect(typo.output).toMatch(/typo\.ts\(3,\d+\): error TS2561: Object literal may only specify known properties, but 'emial' does not exist.*Did you mean to write 'email'\?/);
  });
});

describe('Redocly lint of the served document', () => {
  it('when linted with the recommended rules, then it has no error, and the one warning is the deprecated alias that docs/api-contract.md justifies', async () => {
    const linted = await run(bin('redocly'), ['lint', 'openapi.json', '--config', path.join(root, 'redocly.yaml'), '--format', 'json'], {
      REDOCLY_TELEMETRY: 'off',
      REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
    });
    const report = JSON.parse(linted.stdout.slice(linted.stdout.indexOf('{'))) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; severity: string; message: string }>;
    };
    expect(report.problems.filter((problem) => problem.severity === 'error')).toEqual([]);
    expect(report.problems.map(({ ruleId, severity, message }) => ({ ruleId, severity, message }))).toEqual([
      {
        ruleId: 'no-ambiguous-paths',
        severity: 'warn',
        message: 'Paths should resolve unambiguously. Found two ambiguous paths: `/entities/by-identifier/{identifier}` and `/entities/{id}/addresses`.',
      },
    ]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 1 });
    expect(linted.status).toBe(0);
  });
});
