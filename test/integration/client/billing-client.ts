/**
 * What an integrator writes against the served OpenAPI document: a typed client made with openapi-fetch
 * over the types openapi-typescript generates from /openapi.json. It logs in as a SystemUser, creates a
 * customer and its customer entity, ingests a batch of usage events and reads an invoice, and prints what
 * it got as one JSON line. test/integration/generated-client.test.ts generates `./api` beside a copy of
 * this file, compiles both with `tsc --noEmit --strict` and runs it against a started stack.
 *
 * Settings (environment): BILLING_API_URL, BILLING_CLIENT_KEY, BILLING_CLIENT_SECRET, BILLING_INVOICE_ID.
 */
import createClient from 'openapi-fetch';
import type { paths } from './api';

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

async function main(): Promise<void> {
  const client = createClient<paths>({ baseUrl: setting('BILLING_API_URL') });

  const login = await client.POST('/auth/system-login', {
    body: { clientKey: setting('BILLING_CLIENT_KEY'), clientSecret: setting('BILLING_CLIENT_SECRET') },
  });
  if (!login.data) throw new Error(`login failed: ${JSON.stringify(login.error)}`);
  const { accessToken } = login.data.data;
  client.use({
    onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${accessToken}`);
      return request;
    },
  });

  const customer = await client.POST('/customers', { body: { name: 'Typed Client Co', currency: 'EUR' } });
  if (!customer.data) throw new Error(`customer not created: ${JSON.stringify(customer.error)}`);
  const customerId = customer.data.data.id;

  const entity = await client.POST('/entities', { body: { type: 'customer', name: 'Typed Client GmbH', customerId } });
  if (!entity.data) throw new Error(`entity not created: ${JSON.stringify(entity.error)}`);
  const entityId = entity.data.data.id;

  const batch = await client.POST('/events/batch', {
    body: {
      events: [
        { CustomerEntityId: entityId, metric: 'api_calls', value: 3, timestamp: '2026-11-02T10:00:00Z', eventId: `typed-${customerId}-1` },
        { CustomerEntityId: entityId, metric: 'api_calls', value: '1.5', timestamp: '2026-11-02T11:00:00Z', eventId: `typed-${customerId}-2` },
        { CustomerEntityId: entityId, metric: 'api_calls', value: '1e3', timestamp: '2026-11-02T12:00:00Z' },
      ],
    },
  });
  if (!batch.data) throw new Error(`batch refused: ${JSON.stringify(batch.error)}`);
  let outcome = batch.data.data;
  // 202: the batch is still being ingested; its record tells the outcome once it is done.
  if (!('batchId' in outcome)) {
    const batchId = outcome.id;
    for (let attempt = 0; outcome.status === 'processing' && attempt < 120; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const read = await client.GET('/events/batches/{id}', { params: { path: { id: batchId } } });
      if (!read.data) throw new Error(`batch not read: ${JSON.stringify(read.error)}`);
      outcome = read.data.data;
    }
  }

  const invoice = await client.GET('/invoices/{id}', { params: { path: { id: setting('BILLING_INVOICE_ID') } } });
  if (!invoice.data) throw new Error(`invoice not read: ${JSON.stringify(invoice.error)}`);
  const { id, status, total, currency } = invoice.data.data;

  const missing = await client.GET('/invoices/{id}', { params: { path: { id: 'inv_missing' } } });

  console.log(
    JSON.stringify({
      customer: { id: customerId, name: customer.data.data.name },
      batch: { summary: outcome.summary, failedRecords: outcome.failedRecords },
      invoice: { id, status, total, currency },
      missingInvoice: { status: missing.response.status, error: missing.error },
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
