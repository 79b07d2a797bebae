import { useDatabaseBefore } from './support/migration-database';
import { createInvoiceRunService } from '../../src/modules/invoice-runs/invoice-runs.service';

/**
 * The charge ledger's migration on a database of its own, holding what invoice runs wrote before it:
 * invoices with their lines and the `billed_periods` that claimed them. After the migration every invoice
 * and line reads as before, each billed period is a charge with its line's days and amount, and the next
 * run bills what was not billed yet, and nothing that was.
 */
const LEDGER = '20261126000100_charge_ledger.ts';
const database = useDatabaseBefore(LEDGER, 'ledger');

const org = { organisation_id: 'org_ledger' };

/** What the October and November runs of the worked example left: 16-31 October prorated, then November with October's usage. */
async function seedAsRunsDid(): Promise<void> {
  await database.db('organisations').insert({ id: org.organisation_id, name: 'Ledger Ltd' });
  await database.db('customers').insert({ ...org, id: 'cus_ledger', name: 'Customer' });
  await database.db('entities').insert({ ...org, id: 'ent_ledger', type: 'customer', name: 'Entity', customer_id: 'cus_ledger' });
  await database.db('meters').insert({ ...org, id: 'mtr_ledger', name: 'Calls', metric: 'calls_ledger', aggregation: 'sum' });
  await database.db('billing_plans').insert({ ...org, id: 'pln_ledger', name: 'Monthly', currency: 'USD', billing_period: 'monthly' });
  await database.db('billing_plan_items').insert([
    { ...org, id: 'pli_seat', plan_id: 'pln_ledger', name: 'Seat fee', pricing_model: 'flat', unit_price: '310', billing_timing: 'in_advance', created_at: '2026-01-01T00:00:00Z' },
    { ...org, id: 'pli_calls', plan_id: 'pln_ledger', name: 'API calls', pricing_model: 'per_unit', unit_price: '0.5', meter_id: 'mtr_ledger', billing_timing: 'in_arrears', created_at: '2026-01-01T00:00:01Z' },
  ]);
  await database.db('contracts').insert({ ...org, id: 'con_ledger', customer_id: 'cus_ledger', currency: 'USD', start_date: '2026-10-16', status: 'active' });
  await database.db('contract_plans').insert({ ...org, id: 'cpl_ledger', contract_id: 'con_ledger', plan_id: 'pln_ledger', start_date: '2026-10-16' });
  const invoice = (id: string, date: string, from: string, to: string) => ({ ...org, id, customer_id: 'cus_ledger', contract_id: 'con_ledger', contract_plan_id: 'cpl_ledger', currency: 'USD', date, from_date: from, to_date: to });
  await database.db('invoices').insert([invoice('inv_october', '2026-10-16', '2026-10-16', '2026-10-31'), invoice('inv_november', '2026-11-01', '2026-10-16', '2026-11-30')]);
  const line = (id: string, invoiceId: string, planItemId: string, title: string, quantity: string, price: string, from: string, to: string) => ({ ...org, id, invoice_id: invoiceId, plan_item_id: planItemId, title, description: `${from} to ${to}`, quantity, price, from_date: from, to_date: to });
  await database.db('invoice_items').insert([
    line('itm_1', 'inv_october', 'pli_seat', 'Seat fee', '1', '160.00', '2026-10-16', '2026-10-31'),
    line('itm_2', 'inv_november', 'pli_seat', 'Seat fee', '1', '310.00', '2026-11-01', '2026-11-30'),
    line('itm_3', 'inv_november', 'pli_calls', 'API calls', '100', '0.5', '2026-10-16', '2026-10-31'),
  ]);
  await database.db('billed_periods').insert([
    { ...org, contract_plan_id: 'cpl_ledger', plan_item_id: 'pli_seat', period_from: '2026-10-01', period_to: '2026-10-31', invoice_id: 'inv_october' },
    { ...org, contract_plan_id: 'cpl_ledger', plan_item_id: 'pli_seat', period_from: '2026-11-01', period_to: '2026-11-30', invoice_id: 'inv_november' },
    { ...org, contract_plan_id: 'cpl_ledger', plan_item_id: 'pli_calls', period_from: '2026-10-01', period_to: '2026-10-31', invoice_id: 'inv_november' },
  ]);
  await database.db('usage_events').insert({ ...org, id: 'evt_ledger', customer_entity_id: 'ent_ledger', metric: 'calls_ledger', value: '100', timestamp: '2026-10-20T12:00:00Z' });
}

it('when billed periods become charges, then every invoice line reads as before and the next run bills only what was not billed', async () => {
  await seedAsRunsDid();
  const snapshot = async () => ({
    invoices: await database.db('invoices').orderBy('id').select('*'),
    items: await database.db('invoice_items').orderBy('id').select('*'),
  });
  const before = await snapshot();
  await database.db.migrate.up({ name: LEDGER });
  expect(await snapshot()).toEqual(before);

  const charges = await database.db('charges')
    .orderBy(['invoice_id', 'plan_item_id'])
    .select('plan_item_id', 'kind', database.db.raw("to_char(from_date, 'YYYY-MM-DD') as from"), database.db.raw("to_char(to_date, 'YYYY-MM-DD') as to"), database.db.raw("to_char(period_from, 'YYYY-MM-DD') as period"), 'quantity', 'amount', 'invoice_id');
  expect(charges).toEqual([
    { plan_item_id: 'pli_calls', kind: 'usage', from: '2026-10-16', to: '2026-10-31', period: '2026-10-01', quantity: '100.0000000000', amount: '50.00', invoice_id: 'inv_november' },
    { plan_item_id: 'pli_seat', kind: 'fee', from: '2026-11-01', to: '2026-11-30', period: '2026-11-01', quantity: null, amount: '310.00', invoice_id: 'inv_november' },
    { plan_item_id: 'pli_seat', kind: 'fee', from: '2026-10-16', to: '2026-10-31', period: '2026-10-01', quantity: null, amount: '160.00', invoice_id: 'inv_october' },
  ]);

  const planned = await createInvoiceRunService(database.db, { pageSize: 10, pagesInFlight: 1 }).plan(org.organisation_id, 'con_ledger', '2026-12-01');
  expect(planned.map((invoice) => invoice.items.map((item) => [item.title, item.fromDate, item.toDate, item.quantity, item.price]))).toEqual([
    [
      ['Seat fee', '2026-12-01', '2026-12-31', '1', '310.00'],
      ['API calls', '2026-11-01', '2026-11-30', '0', '0.5'],
    ],
  ]);
});
