import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

/**
 * What the interface contract forbids a SystemUser: its prohibition list (billing plan management,
 * user administration, SKU group writes, customer deletion, schedules), its admin-only endpoints, and
 * webhook endpoints and deliveries (of webhooks, the contract grants a SystemUser only the trigger), and
 * changes to e-mail and invoice templates (a SystemUser reads them).
 * Written from the contract, not from the route table, so that a route declaring the wrong action fails.
 */
const FORBIDDEN_FOR_SYSTEM_USER = new Set([
  'GET /invoice-run-schedules/{id}',
  'PUT /invoice-run-schedules/{id}',
  'POST /invoice-run-schedules/{id}/pause',
  'POST /invoice-run-schedules/{id}/unpause',
  'POST /invoice-run-schedules/{id}/trigger',
  'POST /invoice-run-schedules/{id}/backfill',
  'POST /users/system',
  'DELETE /apps/{id}',
  'DELETE /customers/{id}',
  'PATCH /customers/{id}',
  'POST /meters',
  'PUT /meters/{id}',
  'POST /catalog/sku-groups',
  'DELETE /catalog/sku-groups/{id}',
  'GET /billing/plans',
  'POST /billing/plans',
  'PUT /billing/plans/{id}',
  'DELETE /billing/plans/{id}',
  'POST /billing/plans/{id}/items',
  'PUT /contracts/{contractId}/taxes/{contractTaxId}',
  'DELETE /invoices/{invoiceId}/files/{fileId}',
  'POST /invoice-run-schedules',
  'GET /invoice-run-schedules',
  'DELETE /invoice-run-schedules/{id}',
  'POST /webhooks/endpoints',
  'GET /webhooks/endpoints',
  'GET /webhooks/endpoints/{id}',
  'PUT /webhooks/endpoints/{id}',
  'DELETE /webhooks/endpoints/{id}',
  'POST /webhooks/endpoints/{id}/rotate-secret',
  'GET /webhooks/deliveries',
  'POST /webhooks/deliveries/{id}/redeliver',
  'POST /email-templates',
  'PUT /email-templates/{id}',
  'DELETE /email-templates/{id}',
  'POST /invoice-templates',
  'PUT /invoice-templates/{id}',
  'DELETE /invoice-templates/{id}',
  'PUT /invoice-templates/{id}/logo',
  'DELETE /invoice-templates/{id}/logo',
  'POST /credit-notes/{id}/void',
  'POST /credit-notes/{id}/undo',
  'POST /coupons',
  'PUT /coupons/{id}',
  'DELETE /coupons/{id}',
  'POST /alerts',
  'PUT /alerts/{id}',
  'DELETE /alerts/{id}',
  'POST /features',
  'PUT /features/{id}',
  'DELETE /features/{id}',
  // A payment gateway's credentials and reconciliation, and dunning campaigns, are Admin's
  'PUT /payment-providers/stripe',
  'GET /payment-providers/stripe',
  'GET /payment-providers/stripe/reconciliation',
  'POST /dunning-campaigns',
  'GET /dunning-campaigns',
  'GET /dunning-campaigns/{id}',
  'PUT /dunning-campaigns/{id}',
  'DELETE /dunning-campaigns/{id}',
]);

let api: TestApi;
let tenant: Tenant;
let operations: Array<{ method: string; path: string; public: boolean }>;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'permissions');
  const document = (await api.http().get('/openapi.json').expect(200)).body as {
    paths: Record<string, Record<string, { security: unknown[] }>>;
  };
  operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ method, path, public: operation.security.length === 0 })),
  );
});
afterAll(() => api.close());

function call(method: string, path: string, token: string) {
  const url = path.replace(/\{\w+\}/g, 'id_that_does_not_exist');
  const agent = api.http();
  const request = (agent[method as 'get'] as (url: string) => ReturnType<typeof agent.get>)(url).set(bearer(token));
  return method === 'get' || method === 'delete' ? request : request.send({});
}

it('when the API is described, then it lists the routes the permission walk needs', () => {
  expect(operations.length).toBeGreaterThan(20);
  expect(operations).toContainEqual({ method: 'post', path: '/events/batch', public: false });
});

it('when a SystemUser calls every route, then 403 with the exact body exactly where the contract forbids it', async () => {
  const mismatches: string[] = [];
  for (const operation of operations.filter((op) => !op.public)) {
    const key = `${operation.method.toUpperCase()} ${operation.path}`;
    const res = await call(operation.method, operation.path, tenant.systemToken);
    const forbidden = FORBIDDEN_FOR_SYSTEM_USER.has(key);
    if (forbidden !== (res.status === 403)) mismatches.push(`${key}: ${res.status}`);
    if (res.status === 403) expect(res.body).toEqual({ status: 'error', message: 'Forbidden', errors: [] });
  }
  expect(mismatches).toEqual([]);
});

it('when an Admin calls every route, then none answers 403', async () => {
  const forbidden: string[] = [];
  for (const operation of operations.filter((op) => !op.public)) {
    const res = await call(operation.method, operation.path, tenant.adminToken);
    if (res.status === 403) forbidden.push(`${operation.method.toUpperCase()} ${operation.path}`);
  }
  expect(forbidden).toEqual([]);
});

it('when a route is called without a token, then 401 on every protected route', async () => {
  const open: string[] = [];
  for (const operation of operations.filter((op) => !op.public)) {
    const url = operation.path.replace(/\{\w+\}/g, 'x');
    const res = await (api.http()[operation.method as 'get'] as (u: string) => ReturnType<ReturnType<TestApi['http']>['get']>)(url);
    if (res.status !== 401) open.push(`${operation.method.toUpperCase()} ${operation.path}: ${res.status}`);
  }
  expect(open).toEqual([]);
});
