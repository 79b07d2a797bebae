import { parseArgs } from 'node:util';
import { percentile, postJson, startBenchStack } from './stack';

/**
 * Latency of the invoice lifecycle through HTTP: each of raise, send (PDF rendered and e-mailed) and
 * markPaid is an Update on the invoice's workflow that answers after its activities committed. Measured
 * twice in one run: idle (one client, one invoice at a time), then with `--concurrency` clients.
 *
 *   npx tsx bench/invoice-latency.ts --mode split|start --invoices 100 --concurrency 4
 */
const { values } = parseArgs({
  options: { mode: { type: 'string', default: 'split' }, invoices: { type: 'string', default: '100' }, concurrency: { type: 'string', default: '4' } },
});
if (values.mode !== 'split' && values.mode !== 'start') throw new Error('--mode is split or start');
const mode = values.mode;
const count = Number(values.invoices);
const concurrency = Number(values.concurrency);

async function main(): Promise<void> {
  const stack = await startBenchStack(mode);
  try {
    const { url, systemToken, adminToken } = stack;
    const customer = (await postJson(`${url}/customers`, { name: 'Bench customer', currency: 'USD' }, systemToken)).body.data;
    await postJson(`${url}/entities`, { type: 'seller', name: 'Bench Seller', address: { line1: '1 Road', city: 'Leeds', country: 'GB' } }, systemToken);
    await postJson(`${url}/contact-groups`, { customerId: customer.id, name: 'Billing', contacts: [{ name: 'AP', email: 'ap@example.com' }] }, systemToken);
    const plan = (await postJson(`${url}/billing/plans`, { name: 'Bench plan', currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Fee', pricingModel: 'flat', unitPrice: 100 }] }, adminToken)).body.data;
    const contract = (await postJson(`${url}/contracts`, { customerId: customer.id, currency: 'USD', startDate: '2026-01-01', plans: [{ planId: plan.id }] }, systemToken)).body.data as { plans: Array<{ id: string }> };
    const invoiceIds: string[] = [];
    for (let i = 0; i < 2 * count + 5; i += 1) {
      const invoice = await postJson(
        `${url}/invoices`,
        {
          contractPlanId: contract.plans[0]!.id,
          invoiceData: { date: '2026-11-01', fromDate: '2026-11-01', toDate: '2026-11-30' },
          invoiceItems: [
            { title: 'Platform fee', quantity: 1, price: 100 },
            { title: 'API calls', quantity: 12345, price: '0.0012' },
          ],
        },
        systemToken,
      );
      invoiceIds.push(invoice.body.data.id as string);
    }

    /** Raise, send and mark paid each invoice of `ids`, `clients` at a time; the latency of each step. */
    async function lifecycle(ids: string[], clients: number) {
      const timings: Record<string, number[]> = { raise: [], send: [], markPaid: [] };
      let next = 0;
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (next < ids.length) {
            const id = ids[next++]!;
            for (const [step, path, body] of [
              ['raise', 'raise', {}],
              ['send', 'send', {}],
              ['markPaid', 'mark-paid', { paidDate: '2026-11-20' }],
            ] as const) {
              const sent = performance.now();
              const res = await postJson(`${url}/invoices/${id}/${path}`, body, systemToken);
              if (res.status !== 200) throw new Error(`${step} of ${id} answered ${res.status}`);
              timings[step]!.push(performance.now() - sent);
            }
          }
        }),
      );
      return Object.fromEntries(
        Object.entries(timings).map(([step, values]) => {
          const sorted = [...values].sort((a, b) => a - b);
          return [step, { p50: Math.round(percentile(sorted, 50)), p99: Math.round(percentile(sorted, 99)), n: sorted.length }];
        }),
      );
    }

    // Warm-up: the first Updates pay for connection set-up and workflow caches.
    await lifecycle(invoiceIds.slice(0, 5), 1);
    const idle = await lifecycle(invoiceIds.slice(5, 5 + count), 1);
    const loaded = await lifecycle(invoiceIds.slice(5 + count), concurrency);
    const report = {
      date: new Date().toISOString(),
      settings: { mode, invoices: count, concurrency },
      idleLatencyMs: idle,
      [`latencyMsWith${concurrency}Clients`]: loaded,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
