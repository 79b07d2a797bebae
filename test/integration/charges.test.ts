import { randomUUID } from 'node:crypto';
import { createMeteredContract, invoicesOfRun } from './support/billing-fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { watched } from '../support/wait';

/**
 * How a charge is computed (docs/billing-runs.md): each case of that section through the API, with its
 * exact figures. Every run bills one contract on one date through the invoice-run workflow.
 */
let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'charges');
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);

type Line = { title: string; planItemId: string | null; quantity: string; price: string; fromDate: string; toDate: string };
type Invoice = { id: string; items: Line[] };

const linesOf = (invoice: Invoice | undefined) => (invoice?.items ?? []).map((line) => [line.title, line.fromDate, line.toDate, line.quantity, line.price]);

interface Contract {
  contractId: string;
  contractPlanId: string;
  planId: string;
  seatItemId: string;
  entityId: string;
  metric: string;
}

/** A monthly plan (a seat fee of 100.00 in advance; API calls at 0.5 in arrears) on a contract from `startDate`. */
async function contractFrom(startDate: string, more: { endDate?: string } = {}, owner: Tenant = tenant): Promise<Contract> {
  const made = await createMeteredContract(api, owner, {
    label: 'Charges',
    startDate,
    items: (meterId) => [
      { name: 'Seat fee', pricingModel: 'flat', unitPrice: '100' },
      { name: 'API calls', pricingModel: 'per_unit', unitPrice: '0.5', meterId },
    ],
    contract: more,
  });
  return { ...made, seatItemId: made.itemIds[0]! };
}

const run = async (contract: Contract, date: string) => (await invoicesOfRun<Invoice>(api, tenant, contract.contractId, date))[0];

async function calls(contract: Contract, day: string, count: number): Promise<void> {
  const events = [{ CustomerEntityId: contract.entityId, metric: contract.metric, value: count, timestamp: `${day}T12:00:00Z` }];
  const res = await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
  expect(res.body.data.summary).toMatchObject({ success: 1, failed: 0 });
}

describe('how a charge is computed', () => {
  it('when a 50.00 item is added on 20 November to a plan a contract has used since August, then the 1 December invoice charges it from 20 November only', async () => {
    const contract = await contractFrom('2026-08-01');
    for (const date of ['2026-08-01', '2026-09-01', '2026-10-01', '2026-11-01']) await run(contract, date);
    const added = await api.http().post(`/billing/plans/${contract.planId}/items`).query({ effectiveDate: '2026-11-20' }).set(admin()).send({ name: 'Support', pricingModel: 'flat', unitPrice: '50' }).expect(201);
    expect(added.body.data).toMatchObject({ effectiveFrom: '2026-11-20', effectiveTo: null });

    const december = await run(contract, '2026-12-01');
    expect(linesOf(december)).toEqual([
      ['Seat fee', '2026-12-01', '2026-12-31', '1', '100'],
      ['Support', '2026-11-20', '2026-11-30', '1', '18.33'],
      ['Support', '2026-12-01', '2026-12-31', '1', '50'],
      ['API calls', '2026-11-01', '2026-11-30', '0', '0.5'],
    ]);
  });

  it("when an item is added to a plan in use without a date, then it is in force from today in the organisation's time zone", async () => {
    // An organisation of its own: this one's usage is billed, so its zone can no longer change.
    const zoned = await createTenant(api, 'charges-today');
    await api.http().put('/organisation/settings').set(bearer(zoned.adminToken)).send({ timezone: 'Pacific/Kiritimati' }).expect(200);
    const contract = await contractFrom('2026-08-01', {}, zoned);
    const added = await api.http().post(`/billing/plans/${contract.planId}/items`).set(bearer(zoned.adminToken)).send({ name: 'Support', pricingModel: 'flat', unitPrice: '50' }).expect(201);
    const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'Pacific/Kiritimati' }).format(new Date());
    expect(added.body.data.effectiveFrom).toBe(today);
  });

  it('when a tax rate changes after September and October were billed, then it takes effect from November, and a late correction of September is taxed and credited at the rate September was', async () => {
    const contract = await contractFrom('2026-09-01');
    const vat = (await api.http().post(`/contracts/${contract.contractId}/taxes`).set(system()).send({ name: 'VAT', rate: '20' }).expect(201)).body.data;
    expect(vat).toMatchObject({ rate: '20', effectiveFrom: null, versions: [{ effectiveFrom: null, rate: '20' }] });
    await calls(contract, '2026-09-20', 4);
    const october = (await run(contract, '2026-10-01'))!;
    const raised = (await api.http().post(`/invoices/${october.id}/raise`).set(system()).send({}).expect(200)).body.data;
    // The seat fees of September and October (200.00) and September's 4 calls (2.00), at 20 %.
    expect([raised.subtotal, raised.taxTotal]).toEqual(['202.00', '40.40']);

    // October's fee was charged in advance, up to 31 October: a rate from 15 October would rewrite it.
    const early = await api.http().put(`/contracts/${contract.contractId}/taxes/${vat.id}`).set(admin()).send({ name: 'VAT', rate: '25', effectiveDate: '2026-10-15' });
    expect([early.status, early.body.errors[0].message]).toEqual([409, expect.stringContaining('a tax can change from 2026-11-01 on, not from 2026-10-15')]);
    // A version from a day replaces the versions from that day on: a second change from November is not a third version.
    await api.http().put(`/contracts/${contract.contractId}/taxes/${vat.id}`).set(admin()).send({ name: 'VAT', rate: '24', effectiveDate: '2026-12-01' }).expect(200);
    await api.http().put(`/contracts/${contract.contractId}/taxes/${vat.id}`).set(admin()).send({ name: 'VAT', rate: '26' }).expect(200);
    const changed = (await api.http().put(`/contracts/${contract.contractId}/taxes/${vat.id}`).set(admin()).send({ name: 'VAT', rate: '25' }).expect(200)).body.data;
    expect(changed).toMatchObject({ id: vat.id, rate: '25', effectiveFrom: '2026-11-01', versions: [{ effectiveFrom: null, rate: '20' }, { effectiveFrom: '2026-11-01', rate: '25' }] });
    expect((await api.http().get(`/contracts/${contract.contractId}/taxes`).set(system()).expect(200)).body.data).toEqual([changed]);

    // Six more calls of September arrive late; two of October.
    await calls(contract, '2026-09-25', 6);
    await calls(contract, '2026-10-10', 2);
    const november = (await run(contract, '2026-11-01'))!;
    const lines = linesOf(november);
    expect(lines).toEqual([
      ['Seat fee', '2026-11-01', '2026-11-30', '1', '100'],
      ['API calls: usage of 2026-09-01 to 2026-09-30', '2026-09-01', '2026-09-30', '6', '0.5'],
      ['API calls', '2026-10-01', '2026-10-31', '2', '0.5'],
    ]);
    const novemberRaised = (await api.http().post(`/invoices/${november.id}/raise`).set(system()).send({}).expect(200)).body.data;
    // October's and September's usage at 20 % (4.00: 0.80), November's fee at 25 % (25.00), each rate a tax line over its own items.
    expect([novemberRaised.subtotal, novemberRaised.taxTotal, novemberRaised.total]).toEqual(['104.00', '25.80', '129.80']);
    const [fee, septemberCalls, octoberCalls] = novemberRaised.items.map((item: { id: string }) => item.id);
    expect(novemberRaised.data.taxes).toEqual([
      { name: 'VAT', rate: '20', amount: '0.80', appliesTo: 'all', items: [septemberCalls, octoberCalls] },
      { name: 'VAT', rate: '25', amount: '25.00', appliesTo: 'all', items: [fee] },
    ]);
    // A credit note for the late September calls gives back their 20 %, as September was taxed.
    const note = await api.http().post(`/invoices/${november.id}/credit-notes`).set(system()).send({ reason: 'Calls counted twice', items: [{ invoiceItemId: septemberCalls, amount: '3' }] }).expect(201);
    expect([note.body.data.subtotal, note.body.data.taxTotal, note.body.data.total]).toEqual(['3.00', '0.60', '3.60']);
  });

  it("when billing holds the organisation's zone, then a change of the zone waits for it, and other settings do not", async () => {
    const owner = await createTenant(api, 'charges-zone-lock');
    await api.http().get('/organisation/settings').set(bearer(owner.adminToken)).expect(200);
    const billing = await api.db.transaction();
    try {
      // What a run's page takes while it rates: the settings row, for key share, until its charges commit.
      await billing('organisation_settings').where({ organisation_id: owner.organisationId }).forKeyShare().first();
      await api.http().put('/organisation/settings').set(bearer(owner.adminToken)).send({ paymentTermsDays: 14 }).expect(200);
      const zone = watched(api.http().put('/organisation/settings').set(bearer(owner.adminToken)).send({ timezone: 'Europe/Berlin' }));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(zone.answered()).toBe(false);
      await billing.commit();
      expect((await zone.answer).status).toBe(200);
    } finally {
      if (!billing.isCompleted()) await billing.rollback();
    }
  });

  it("when the organisation's usage has been billed, then its timezone can no longer change (409): the billed windows are days in it", async () => {
    const contract = await contractFrom('2026-09-01');
    await calls(contract, '2026-09-30', 4);
    expect(linesOf(await run(contract, '2026-10-01'))).toContainEqual(['API calls', '2026-09-01', '2026-09-30', '4', '0.5']);
    const refused = await api.http().put('/organisation/settings').set(admin()).send({ timezone: 'America/New_York' });
    expect([refused.status, refused.body.errors[0].message]).toEqual([409, expect.stringContaining('can no longer change')]);
    expect((await api.http().get('/organisation/settings').set(admin()).expect(200)).body.data.timezone).toBe('UTC');
    // The same zone again is no change, under any of its names (a link names the same days).
    await api.http().put('/organisation/settings').set(admin()).send({ timezone: 'Etc/UTC' }).expect(200);
    await api.http().put('/organisation/settings').set(admin()).send({ timezone: 'UTC' }).expect(200);
    // Had it moved, October's run would have read September as 04:00Z to 04:00Z and given the 4 calls back.
    expect(linesOf(await run(contract, '2026-11-01'))).toContainEqual(['API calls', '2026-10-01', '2026-10-31', '0', '0.5']);
  });

  it('when an item is removed from 1 December, then the days charged keep it, an earlier date inside them is refused (409), and December bills without it', async () => {
    const contract = await contractFrom('2026-10-01');
    await run(contract, '2026-11-01');
    const early = await api.http().delete(`/billing/plans/${contract.planId}/items/${contract.seatItemId}`).query({ effectiveDate: '2026-11-15' }).set(admin());
    expect(early.status).toBe(409);
    expect(early.body.errors[0].message).toMatch(/charged plan item .* for 2026-11-01 to 2026-11-30: the item can change from 2026-12-01 on, not from 2026-11-15/);
    await api.http().delete(`/billing/plans/${contract.planId}/items/${contract.seatItemId}`).query({ effectiveDate: '2026-12-01' }).set(admin()).expect(200);
    const plan = await api.http().get(`/billing/plans/${contract.planId}`).set(admin()).expect(200);
    expect(plan.body.data.items[0]).toMatchObject({ id: contract.seatItemId, effectiveTo: '2026-11-30' });
    const december = await run(contract, '2026-12-01');
    expect(linesOf(december)).toEqual([['API calls', '2026-11-01', '2026-11-30', '0', '0.5']]);
  });

  it("when an active contract's end moves from 30 November to 31 March, then its plans move with it and December is billed", async () => {
    const contract = await contractFrom('2026-08-01', { endDate: '2026-11-30' });
    await run(contract, '2026-11-01');
    const moved = await api.http().put(`/contracts/${contract.contractId}`).set(system()).send({ endDate: '2027-03-31' }).expect(200);
    expect(moved.body.data.plans[0].endDate).toBe('2027-03-31');
    const december = await run(contract, '2026-12-01');
    expect(linesOf(december)).toEqual([
      ['Seat fee', '2026-12-01', '2026-12-31', '1', '100'],
      ['API calls', '2026-11-01', '2026-11-30', '0', '0.5'],
    ]);
    // An end before a day already charged is refused, naming the charge.
    const back = await api.http().put(`/contracts/${contract.contractId}`).set(system()).send({ endDate: '2026-12-15' });
    expect(back.status).toBe(409);
    expect(back.body.errors[0].message).toMatch(/charged plan item .* for 2026-12-01 to 2026-12-31: the contract cannot end before 2026-12-31/);
  });

  it('when sync-items runs on the 16-31 October draft, then it keeps the prorated 51.61 (100.00 × 16/31) and no usage; the 1 November run bills October usage once', async () => {
    const contract = await contractFrom('2026-10-16');
    await calls(contract, '2026-10-20', 100);
    const october = (await run(contract, '2026-10-16'))!;
    expect(linesOf(october)).toEqual([['Seat fee', '2026-10-16', '2026-10-31', '1', '51.61']]);
    const synced = await api.http().post(`/invoices/${october.id}/sync-items`).set(system()).expect(200);
    expect(linesOf(synced.body.data)).toEqual([['Seat fee', '2026-10-16', '2026-10-31', '1', '51.61']]);

    const november = (await run(contract, '2026-11-01'))!;
    expect(linesOf(november)).toEqual([
      ['Seat fee', '2026-11-01', '2026-11-30', '1', '100'],
      ['API calls', '2026-10-16', '2026-10-31', '100', '0.5'],
    ]);
    // Synced again, the November draft bills October's usage once, not a second time.
    const again = await api.http().post(`/invoices/${november.id}/sync-items`).set(system()).expect(200);
    expect(linesOf(again.body.data)).toEqual(linesOf(november));
  });

  it('when usage for October arrives after October was billed, then the next invoice bills it on its own line naming October', async () => {
    const contract = await contractFrom('2026-10-01');
    await calls(contract, '2026-10-05', 100);
    await run(contract, '2026-10-01');
    const november = await run(contract, '2026-11-01');
    expect(linesOf(november)).toContainEqual(['API calls', '2026-10-01', '2026-10-31', '100', '0.5']);
    await calls(contract, '2026-10-28', 20);
    await calls(contract, '2026-11-03', 7);
    const december = await run(contract, '2026-12-01');
    expect(linesOf(december)).toEqual([
      ['Seat fee', '2026-12-01', '2026-12-31', '1', '100'],
      ['API calls: usage of 2026-10-01 to 2026-10-31', '2026-10-01', '2026-10-31', '20', '0.5'],
      ['API calls', '2026-11-01', '2026-11-30', '7', '0.5'],
    ]);
    // Nothing arrived since: the next run has nothing late to bill.
    const january = await run(contract, '2027-01-01');
    expect(linesOf(january).filter(([title]) => String(title).includes('usage of'))).toEqual([]);
  });

  it('when billed usage is corrected or deleted, then the next invoice bills the difference and the event keeps its earlier versions', async () => {
    const contract = await contractFrom('2026-10-01');
    await calls(contract, '2026-10-05', 100);
    await run(contract, '2026-10-01');
    expect(linesOf(await run(contract, '2026-11-01'))).toContainEqual(['API calls', '2026-10-01', '2026-10-31', '100', '0.5']);
    const listed = await api.http().get('/usage').query({ metric: contract.metric }).set(system()).expect(200);
    const eventId = listed.body.data.items[0].id as string;

    await api.http().put(`/usage/${eventId}`).set(system()).send({ value: 60 }).expect(200);
    const december = await run(contract, '2026-12-01');
    expect(linesOf(december)).toContainEqual(['API calls: usage of 2026-10-01 to 2026-10-31', '2026-10-01', '2026-10-31', '-40', '0.5']);
    await api.http().delete(`/usage/${eventId}`).set(system()).expect(200);
    const january = await run(contract, '2027-01-01');
    expect(linesOf(january)).toContainEqual(['API calls: usage of 2026-10-01 to 2026-10-31', '2026-10-01', '2026-10-31', '-60', '0.5']);

    const versions = await api.http().get(`/usage/${eventId}/versions`).set(system()).expect(200);
    expect(versions.body.data.items.map((version: { value: string; change: string }) => [version.value, version.change])).toEqual([
      ['100', 'edited'],
      ['60', 'deleted'],
    ]);
    await api.http().get(`/usage/evt_${randomUUID()}/versions`).set(system()).expect(404);
  });

  it('when usage a credit note gave back in part is deleted, then the correction gives back only the rest; and a line whose usage was corrected down is credited no more than its window holds', async () => {
    const contract = await contractFrom('2026-10-01');
    await calls(contract, '2026-10-05', 100);
    await calls(contract, '2026-11-03', 80);
    await run(contract, '2026-10-01');
    const raise = async (invoice: Invoice) => (await api.http().post(`/invoices/${invoice.id}/raise`).set(system()).send({}).expect(200)).body.data as Invoice;
    const usageLine = (invoice: Invoice, from: string) => invoice.items.find((line) => line.title === 'API calls' && line.fromDate === from)! as Line & { id: string };
    const november = await raise((await run(contract, '2026-11-01'))!);
    const october = usageLine(november, '2026-10-01');
    await api.http().post(`/invoices/${november.id}/credit-notes`).set(system()).send({ reason: 'Disputed calls', items: [{ invoiceItemId: october.id, amount: '30' }] }).expect(201);
    const december = await raise((await run(contract, '2026-12-01'))!);
    const novemberCalls = usageLine(december, '2026-11-01');
    expect([novemberCalls.quantity, novemberCalls.price]).toEqual(['80', '0.5']);

    const listed = await api.http().get('/usage').query({ metric: contract.metric }).set(system()).expect(200);
    const byDay = new Map(listed.body.data.items.map((event: { id: string; timestamp: string }) => [event.timestamp.slice(0, 10), event.id]));
    await api.http().delete(`/usage/${byDay.get('2026-10-05')}`).set(system()).expect(200);
    await api.http().put(`/usage/${byDay.get('2026-11-03')}`).set(system()).send({ value: 20 }).expect(200);
    const january = await run(contract, '2027-01-01');
    // October charged 50.00 and the note gave 30.00 back: 20.00 is left to give. November gives back its 60 calls.
    expect(linesOf(january).filter(([title]) => String(title).includes('usage of'))).toEqual([
      ['API calls: usage of 2026-10-01 to 2026-10-31', '2026-10-01', '2026-10-31', '1', '-20'],
      ['API calls: usage of 2026-11-01 to 2026-11-30', '2026-11-01', '2026-11-30', '-60', '0.5'],
    ]);
    // November's line charged 40.00, of which the correction gave 30.00 back: 10.00 is left to credit on it.
    const over = await api.http().post(`/invoices/${december.id}/credit-notes`).set(system()).send({ reason: 'Disputed calls', items: [{ invoiceItemId: novemberCalls.id, amount: '10.01' }] });
    expect([over.status, over.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining('exceeds what is left to credit on it, 10.00 USD')]);
    // Nor by an amount of the whole invoice: its 140.00 has 110.00 left to credit, the seat fee and those 10.00.
    const byAmount = await api.http().post(`/invoices/${december.id}/credit-notes`).set(system()).send({ reason: 'Everything', amount: '120' });
    expect([byAmount.status, byAmount.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining("what is left to credit on the invoice's items: 110.00 USD")]);
    await api.http().post(`/invoices/${december.id}/credit-notes`).set(system()).send({ reason: 'Disputed calls', items: [{ invoiceItemId: novemberCalls.id, amount: '10' }] }).expect(201);
    // Both windows hold nothing now: deleting the rest of November gives nothing back.
    await api.http().delete(`/usage/${byDay.get('2026-11-03')}`).set(system()).expect(200);
    const february = await run(contract, '2027-02-01');
    expect(linesOf(february).filter(([title]) => String(title).includes('usage of'))).toEqual([]);
  });

  it('when the invoice that charged a window is cancelled, then usage deleted from it gives nothing back; and a correction cancelled gave nothing back, so a note may credit it, after which the correction cannot be restored', async () => {
    const raise = async (invoice: Invoice) => (await api.http().post(`/invoices/${invoice.id}/raise`).set(system()).send({}).expect(200)).body.data as Invoice;
    const cancel = (invoice: Invoice) => api.http().put(`/invoices/${invoice.id}`).set(system()).send({ status: 'cancelled' }).expect(200);
    const eventsOf = async (contract: Contract) => (await api.http().get('/usage').query({ metric: contract.metric }).set(system()).expect(200)).body.data.items as Array<{ id: string }>;
    const lateLines = (invoice: Invoice | undefined) => linesOf(invoice).filter(([title]) => String(title).includes('usage of'));

    // October's 100 calls charged on an invoice that was cancelled: the customer owes nothing for them.
    const cancelled = await contractFrom('2026-10-01');
    await calls(cancelled, '2026-10-05', 100);
    await run(cancelled, '2026-10-01');
    await cancel(await raise((await run(cancelled, '2026-11-01'))!));
    await api.http().delete(`/usage/${(await eventsOf(cancelled))[0]!.id}`).set(system()).expect(200);
    expect(lateLines(await run(cancelled, '2026-12-01'))).toEqual([]);

    // The correction of 60 deleted calls is cancelled before it goes out: the window still holds 50.00.
    const corrected = await contractFrom('2026-10-01');
    await calls(corrected, '2026-10-05', 100);
    await run(corrected, '2026-10-01');
    const november = await raise((await run(corrected, '2026-11-01'))!);
    await api.http().put(`/usage/${(await eventsOf(corrected))[0]!.id}`).set(system()).send({ value: 40 }).expect(200);
    const december = (await run(corrected, '2026-12-01'))!;
    expect(lateLines(december)).toEqual([['API calls: usage of 2026-10-01 to 2026-10-31', '2026-10-01', '2026-10-31', '-60', '0.5']]);
    await cancel(december);
    const october = november.items.find((line) => line.title === 'API calls')! as Line & { id: string };
    await api.http().post(`/invoices/${november.id}/credit-notes`).set(system()).send({ reason: 'Calls corrected', items: [{ invoiceItemId: october.id, amount: '50' }] }).expect(201);
    // The note gave the window back: the cancelled correction cannot come back and give it back again.
    const restored = await api.http().post(`/fsm/invoice/${december.id}/undo`).set(system()).send({});
    expect([restored.status, restored.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining('its correction of the usage of 2026-10-01 to 2026-10-31 gives back 30.00 USD, more than that usage holds now (0.00)')]);
    expect((await api.http().get(`/invoices/${december.id}`).set(system()).expect(200)).body.data.status).toBe('cancelled');
  });

  it("when an invoice of a contract is cancelled or its cancellation undone, then the step waits for the contract's row lock, as runs and credit notes do", async () => {
    const contract = await contractFrom('2026-10-01');
    await calls(contract, '2026-10-05', 100);
    const invoice = (await run(contract, '2026-11-01'))!;
    await api.http().post(`/invoices/${invoice.id}/raise`).set(system()).send({}).expect(200);
    const statusOf = async () => (await api.db('invoices').where({ id: invoice.id }).first('status')).status as string;

    /** `step` runs while another transaction holds the contract's row: it waits, then ends once that commits. */
    const waitsForContract = async (step: () => Promise<{ status: number }>, before: string, after: string) => {
      const blocker = await api.db.transaction();
      await blocker('contracts').where({ id: contract.contractId }).forUpdate().first();
      const answer = step();
      const deadline = Date.now() + 30_000;
      for (;;) {
        const waiting = await api.db.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%from \"contracts\"%'");
        if (waiting.rows[0].n > 0) break;
        if (Date.now() > deadline) {
          await blocker.rollback();
          throw new Error(`the step ended as ${await statusOf()} without waiting for the contract's lock`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(await statusOf()).toBe(before);
      await blocker.commit();
      expect((await answer).status).toBe(200);
      expect(await statusOf()).toBe(after);
    };
    await waitsForContract(() => api.http().put(`/invoices/${invoice.id}`).set(system()).send({ status: 'cancelled' }).then((res) => res), 'raised', 'cancelled');
    await waitsForContract(() => api.http().post(`/fsm/invoice/${invoice.id}/undo`).set(system()).send({}).then((res) => res), 'cancelled', 'raised');
  });

  it("when a run's lines each round down, then its total is the sum of the rounded lines, as the raised invoice's subtotal", async () => {
    const tag = randomUUID().slice(0, 8);
    const customer = await api.http().post('/customers').set(system()).send({ name: `Rounding ${tag}`, currency: 'USD' }).expect(201);
    const entity = await api.http().post('/entities').set(system()).send({ type: 'customer', name: 'Entity', customerId: customer.body.data.id }).expect(201);
    const metric = `rounding_${tag}`;
    const meter = await api.http().post('/meters').set(admin()).send({ name: metric, metric, aggregation: 'sum' }).expect(201);
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({ name: metric, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Calls', pricingModel: 'per_unit', unitPrice: '0.0049', meterId: meter.body.data.id }] })
      .expect(201);
    const contract = await api.http().post('/contracts').set(system()).send({ customerId: customer.body.data.id, currency: 'USD', startDate: '2026-09-01', plans: [{ planId: plan.body.data.id }] }).expect(201);
    await api.http().post(`/contracts/${contract.body.data.id}/activate`).set(system()).send({}).expect(200);
    const events = ['2026-09-10', '2026-10-10'].map((day) => ({ CustomerEntityId: entity.body.data.id, metric, value: 1, timestamp: `${day}T12:00:00Z` }));
    await api.http().post('/events/batch').set(system()).send({ events }).expect(200);

    // Two lines of 0.0049 each: 0.00 and 0.00 once rounded, where their unrounded sum would round to 0.01.
    const started = await api.http().post('/invoice-runs').set(system()).send({ billingDate: '2026-11-01', contractIds: [contract.body.data.id] }).expect(201);
    let run = started.body.data;
    while (run.status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = (await api.http().get(`/invoice-runs/${started.body.data.id}`).set(system()).expect(200)).body.data;
    }
    expect(run.totals).toEqual([{ currency: 'USD', amount: '0.00' }]);
    const [invoice] = (await api.http().get('/invoices').query({ invoiceRunId: run.id }).set(system()).expect(200)).body.data.items as Invoice[];
    expect(invoice!.items.map((line) => line.quantity)).toEqual(['1', '1']);
    const raised = await api.http().post(`/invoices/${invoice!.id}/raise`).set(system()).send({}).expect(200);
    expect(raised.body.data.subtotal).toBe('0.00');
  });

  it("when a draft's charged line or coupon discount is deleted, then 409: the ledger bills each day once, and the coupon counts its period served", async () => {
    const contract = await contractFrom('2026-10-01');
    const code = `DEL${randomUUID().slice(0, 6).toUpperCase()}`;
    await api.http().post('/coupons').set(admin()).send({ code, percentOff: '10', duration: 'once' }).expect(201);
    await api.http().post(`/contracts/${contract.contractId}/coupons`).set(system()).send({ code }).expect(201);
    const october = (await run(contract, '2026-10-01'))!;
    const lineIds = new Map((october.items as Array<Line & { id: string }>).map((line) => [line.title, line.id]));
    const remove = (title: string) => api.http().delete(`/invoices/${october.id}/items/${lineIds.get(title)}`).set(system());
    const fee = await remove('Seat fee');
    expect([fee.status, fee.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining('from 2026-10-01 to 2026-10-31, which is billed once')]);
    const discount = await remove(`Coupon ${code}`);
    expect([discount.status, discount.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining('counts this period as served')]);
    expect(linesOf((await api.http().get(`/invoices/${october.id}`).set(system()).expect(200)).body.data)).toHaveLength(2);
  });

  it('when two coupons stack on one fee, then together they take off at most what it charged: the invoice never goes below zero', async () => {
    const contract = await contractFrom('2026-10-01');
    const tag = randomUUID().slice(0, 6).toUpperCase();
    await api.http().post('/coupons').set(admin()).send({ code: `HALF${tag}`, percentOff: '60', duration: 'once' }).expect(201);
    await api.http().post('/coupons').set(admin()).send({ code: `FLAT${tag}`, amountOff: '70', currency: 'USD', duration: 'once' }).expect(201);
    for (const code of [`HALF${tag}`, `FLAT${tag}`]) await api.http().post(`/contracts/${contract.contractId}/coupons`).set(system()).send({ code }).expect(201);
    const october = (await run(contract, '2026-10-01'))!;
    expect(linesOf(october)).toEqual([
      ['Seat fee', '2026-10-01', '2026-10-31', '1', '100'],
      [`Coupon HALF${tag}`, '2026-10-01', '2026-10-31', '1', '-60'],
      [`Coupon FLAT${tag}`, '2026-10-01', '2026-10-31', '1', '-40'],
    ]);
    const raised = await api.http().post(`/invoices/${october.id}/raise`).set(system()).send({}).expect(200);
    expect(raised.body.data.total).toBe('0.00');
  });

  it('when an invoice with a coupon and a tax is raised, then the ledger says at what net and what tax each day was charged', async () => {
    const contract = await contractFrom('2026-10-01');
    const code = `TEN${randomUUID().slice(0, 6).toUpperCase()}`;
    await api.http().post('/coupons').set(admin()).send({ code, percentOff: '10', duration: 'once' }).expect(201);
    await api.http().post(`/contracts/${contract.contractId}/coupons`).set(system()).send({ code }).expect(201);
    await api.http().post(`/contracts/${contract.contractId}/taxes`).set(system()).send({ name: 'VAT', rate: '20' }).expect(201);
    const october = (await run(contract, '2026-10-01'))!;
    const ledger = async () => (await api.http().get(`/contracts/${contract.contractId}/charges`).set(system()).expect(200)).body.data;
    expect((await ledger()).items).toEqual([
      expect.objectContaining({ kind: 'fee', planItemId: contract.seatItemId, fromDate: '2026-10-01', toDate: '2026-10-31', periodFrom: '2026-10-01', amount: '100.00', discount: '10.00', tax: null, invoiceId: october.id }),
    ]);
    await api.http().post(`/invoices/${october.id}/raise`).set(system()).send({}).expect(200);
    const raised = await ledger();
    expect(raised).toMatchObject({ page: 1, total: 1 });
    expect(raised.items[0]).toMatchObject({ amount: '100.00', discount: '10.00', tax: '18.00' });
    await api.http().get(`/contracts/con_${randomUUID()}/charges`).set(system()).expect(404);
  });

  it("when usage arrives for an ended contract's last month, then the next run bills it on a closing line", async () => {
    const contract = await contractFrom('2026-09-01', { endDate: '2026-10-31' });
    await run(contract, '2026-11-01');
    await calls(contract, '2026-10-30', 40);
    const closing = await run(contract, '2026-12-01');
    expect(linesOf(closing)).toEqual([['API calls: usage of 2026-10-01 to 2026-10-31', '2026-10-01', '2026-10-31', '40', '0.5']]);
  });

  it('when a milestone bills a plan item, then runs leave that item to it: the fee is billed once, by the milestone', async () => {
    const contract = await contractFrom('2026-10-01');
    const milestones = `/contracts/${contract.contractId}/plans/${contract.contractPlanId}/milestones`;
    const milestone = await api.http().post(milestones).set(system()).send({ planItemId: contract.seatItemId, name: 'Go-live', percentage: 50 }).expect(201);
    expect(await run(contract, '2026-10-01')).toBeUndefined();
    const november = await run(contract, '2026-11-01');
    expect(linesOf(november)).toEqual([['API calls', '2026-10-01', '2026-10-31', '0', '0.5']]);
    await api.http().post(`${milestones}/${milestone.body.data.id}/achieve`).set(system()).send({}).expect(200);
    const billed = await api.http().get('/invoices').query({ contractId: contract.contractId, limit: 100 }).set(system()).expect(200);
    const seatLines = (billed.body.data.items as Invoice[]).flatMap((invoice) => invoice.items).filter((line) => line.planItemId === contract.seatItemId);
    expect(seatLines.map((line) => [line.quantity, line.price])).toEqual([['1', '50']]);
  });

  it("when two contracts of one customer bill one meter, then each bills its own entities' usage, and a second contract billing the same entity is refused (409)", async () => {
    const tag = randomUUID().slice(0, 8);
    const customer = await api.http().post('/customers').set(system()).send({ name: `Split ${tag}`, currency: 'USD' }).expect(201);
    const entity = async (name: string) => (await api.http().post('/entities').set(system()).send({ type: 'customer', name, customerId: customer.body.data.id }).expect(201)).body.data.id as string;
    const [berlin, paris] = [await entity('Berlin GmbH'), await entity('Paris SAS')];
    const metric = `split_${tag}`;
    const meter = await api.http().post('/meters').set(admin()).send({ name: `Split ${tag}`, metric, aggregation: 'sum' }).expect(201);
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({ name: `Calls ${tag}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'API calls', pricingModel: 'per_unit', unitPrice: '0.5', meterId: meter.body.data.id }] })
      .expect(201);
    const contract = async (customerEntityIds?: string[]) => {
      const created = await api
        .http()
        .post('/contracts')
        .set(system())
        .send({ customerId: customer.body.data.id, currency: 'USD', startDate: '2026-10-01', plans: [{ planId: plan.body.data.id, ...(customerEntityIds ? { customerEntityIds } : {}) }] })
        .expect(201);
      return { contractId: created.body.data.id as string, contractPlanId: created.body.data.plans[0].id as string, customerEntityIds: created.body.data.plans[0].customerEntityIds };
    };
    const first = await contract([berlin]);
    expect(first.customerEntityIds).toEqual([berlin]);
    await api.http().post(`/contracts/${first.contractId}/activate`).set(system()).send({}).expect(200);
    const everything = await contract();
    const refused = await api.http().post(`/contracts/${everything.contractId}/activate`).set(system()).send({});
    expect(refused.status).toBe(409);
    expect(refused.body.errors[0].message).toBe(
      `contract plan ${first.contractPlanId} of contract ${first.contractId} bills the usage of meter ${meter.body.data.id} for customer entity ${berlin} from 2026-10-01: give the contract plans customerEntityIds that do not overlap`,
    );
    const second = await contract([paris]);
    await api.http().post(`/contracts/${second.contractId}/activate`).set(system()).send({}).expect(200);

    const events = [
      { CustomerEntityId: berlin, metric, value: 100, timestamp: '2026-10-05T12:00:00Z' },
      { CustomerEntityId: paris, metric, value: 30, timestamp: '2026-10-06T12:00:00Z' },
    ];
    await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
    const billed = async (contractId: string) => linesOf((await invoicesOfRun<Invoice>(api, tenant, contractId, '2026-11-01'))[0]);
    expect(await billed(first.contractId)).toEqual([['API calls', '2026-10-01', '2026-10-31', '100', '0.5']]);
    expect(await billed(second.contractId)).toEqual([['API calls', '2026-10-01', '2026-10-31', '30', '0.5']]);

    // An entity of another customer is not the contract's to bill.
    const stranger = await contractFrom('2026-10-01');
    const foreign = await api
      .http()
      .post('/contracts')
      .set(system())
      .send({ customerId: customer.body.data.id, currency: 'USD', startDate: '2026-10-01', plans: [{ planId: plan.body.data.id, customerEntityIds: [stranger.entityId] }] });
    expect(foreign.status).toBe(400);
    expect(foreign.body.errors[0]).toMatchObject({ path: 'body.plans.0.customerEntityIds.0', message: 'is not an entity of the customer' });
  });

  it("when an open contract's end moves later into days another contract bills the same usage of, then 409; a terminated contract's end cannot move at all", async () => {
    const tag = randomUUID().slice(0, 8);
    const customer = await api.http().post('/customers').set(system()).send({ name: `Ends ${tag}`, currency: 'USD' }).expect(201);
    await api.http().post('/entities').set(system()).send({ type: 'customer', name: 'Entity', customerId: customer.body.data.id }).expect(201);
    const meter = await api.http().post('/meters').set(admin()).send({ name: `Ends ${tag}`, metric: `ends_${tag}`, aggregation: 'sum' }).expect(201);
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({ name: `Ends ${tag}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'API calls', pricingModel: 'per_unit', unitPrice: '0.5', meterId: meter.body.data.id }] })
      .expect(201);
    const contract = async (startDate: string, endDate?: string) =>
      (await api.http().post('/contracts').set(system()).send({ customerId: customer.body.data.id, currency: 'USD', startDate, ...(endDate ? { endDate } : {}), plans: [{ planId: plan.body.data.id }] }).expect(201)).body.data as { id: string; plans: Array<{ id: string }> };
    const october = await contract('2026-10-01', '2026-10-31');
    const after = await contract('2026-11-01');
    for (const { id } of [october, after]) await api.http().post(`/contracts/${id}/activate`).set(system()).send({}).expect(200);

    const reopened = await api.http().put(`/contracts/${october.id}`).set(system()).send({ endDate: null });
    expect([reopened.status, reopened.body.errors[0].message]).toEqual([409, expect.stringContaining(`contract plan ${after.plans[0]!.id} of contract ${after.id} bills the usage of meter ${meter.body.data.id}`)]);
    expect((await api.http().get(`/contracts/${october.id}`).set(system()).expect(200)).body.data.endDate).toBe('2026-10-31');

    await api.http().post(`/contracts/${after.id}/terminate`).set(system()).expect(200);
    const moved = await api.http().put(`/contracts/${after.id}`).set(system()).send({ endDate: null });
    expect([moved.status, moved.body.errors[0].message]).toEqual([409, 'cannot change the end of a contract that is terminated']);
    // The calendar's last day is an end like any other: no day after it can have been charged.
    const draft = await contract('2027-01-01');
    expect((await api.http().put(`/contracts/${draft.id}`).set(system()).send({ endDate: '9999-12-31' }).expect(200)).body.data.endDate).toBe('9999-12-31');
  });

  it("when a schedule in a zone ahead of the organisation's runs, then a usage window not over where the organisation is waits for the next run", async () => {
    // Kiritimati (UTC+14) is always a day or two ahead of Pago Pago (UTC-11): the schedule's billing date D
    // starts 25 hours before the organisation's D, so the window ending on the day before D is still open.
    const owner = await createTenant(api, 'charges-zones');
    await api.http().put('/organisation/settings').set(bearer(owner.adminToken)).send({ timezone: 'Pacific/Pago_Pago' }).expect(200);
    const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'Pacific/Kiritimati' }).format(new Date());
    const shift = (days: number) => new Date(Date.parse(`${today}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
    const tag = randomUUID().slice(0, 8);
    const ownerSystem = bearer(owner.systemToken);
    const ownerAdmin = bearer(owner.adminToken);
    const customer = await api.http().post('/customers').set(ownerSystem).send({ name: `Zones ${tag}`, currency: 'USD' }).expect(201);
    const entity = await api.http().post('/entities').set(ownerSystem).send({ type: 'customer', name: 'Entity', customerId: customer.body.data.id }).expect(201);
    const meter = await api.http().post('/meters').set(ownerAdmin).send({ name: 'Calls', metric: `zones_${tag}`, aggregation: 'sum' }).expect(201);
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(ownerAdmin)
      .send({ name: 'Calls', currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'API calls', pricingModel: 'per_unit', unitPrice: '0.5', meterId: meter.body.data.id }] })
      .expect(201);
    const contract = await api
      .http()
      .post('/contracts')
      .set(ownerSystem)
      .send({ customerId: customer.body.data.id, currency: 'USD', startDate: shift(-10), endDate: shift(-1), billingAnchor: 'anniversary', plans: [{ planId: plan.body.data.id }] })
      .expect(201);
    const contractId = contract.body.data.id as string;
    await api.http().post(`/contracts/${contractId}/activate`).set(ownerSystem).send({}).expect(200);
    const events = [{ CustomerEntityId: entity.body.data.id, metric: `zones_${tag}`, value: 5, timestamp: new Date(Date.now() - 60_000).toISOString() }];
    await api.http().post('/events/batch').set(ownerSystem).send({ events }).expect(200);

    const schedule = await api.http().post('/invoice-run-schedules').set(ownerAdmin).send({ name: 'Ahead', cron: '0 6 1 * *', timezone: 'Pacific/Kiritimati' }).expect(201);
    await api.http().post(`/invoice-run-schedules/${schedule.body.data.id}/trigger`).set(ownerAdmin).send({}).expect(201);
    const deadline = Date.now() + 60_000;
    let run: { id: string; status: string; billing_date: Date } | undefined;
    while (!run || run.status === 'running') {
      if (Date.now() > deadline) throw new Error('the scheduled run did not finish');
      await new Promise((resolve) => setTimeout(resolve, 250));
      run = await api.db('invoice_runs').where({ schedule_id: schedule.body.data.id }).first('id', 'status', 'billing_date');
    }
    expect(run.status).toBe('completed');
    expect(await api.db('invoices').where({ contract_id: contractId }).count({ n: '*' })).toEqual([{ n: '0' }]);

    // A run once the window is over where the organisation is bills all of it, once.
    const later = await invoicesOfRun<Invoice>(api, owner, contractId, shift(1));
    expect(linesOf(later[0])).toEqual([['API calls', shift(-10), shift(-1), '5', '0.5']]);
  });

  it("when a plan in use changes from monthly to quarterly, then a date inside a charged span is refused and from 1 December the quarter's days are charged once", async () => {
    const contract = await contractFrom('2026-10-01');
    await run(contract, '2026-11-01');
    const inside = await api.http().put(`/billing/plans/${contract.planId}`).set(admin()).send({ billingPeriod: 'quarterly', effectiveDate: '2026-11-15' });
    expect(inside.status).toBe(409);
    expect(inside.body.errors[0].message).toMatch(/for 2026-11-01 to 2026-11-30: the billing period can change from 2026-12-01 on/);
    const changed = await api.http().put(`/billing/plans/${contract.planId}`).set(admin()).send({ billingPeriod: 'quarterly', effectiveDate: '2026-12-01' }).expect(200);
    expect(changed.body.data.billingPeriod).toBe('quarterly');

    // December is the rest of the October-December quarter: 100.00 × 31/92, by the telescoping rule 100.00 − 66.30.
    const december = await run(contract, '2026-12-01');
    expect(linesOf(december)).toEqual([
      ['Seat fee', '2026-12-01', '2026-12-31', '1', '33.7'],
      ['API calls', '2026-11-01', '2026-11-30', '0', '0.5'],
    ]);
    const january = await run(contract, '2027-01-01');
    expect(linesOf(january)).toEqual([
      ['Seat fee', '2027-01-01', '2027-03-31', '1', '100'],
      ['API calls', '2026-12-01', '2026-12-31', '0', '0.5'],
    ]);
    expect(await run(contract, '2027-02-01')).toBeUndefined();
  });
});

describe('coupons and corrections', () => {
  /** A 50 % coupon repeating for `periods` periods, applied to the contract. */
  async function halfOff(contract: Contract, periods: number): Promise<string> {
    const code = `HALF${randomUUID().slice(0, 8)}`;
    await api.http().post('/coupons').set(admin()).send({ code, percentOff: '50', duration: 'repeating', durationPeriods: periods }).expect(201);
    await api.http().post(`/contracts/${contract.contractId}/coupons`).set(system()).send({ code }).expect(201);
    return `Coupon ${code}`;
  }
  const couponLines = (invoice: Invoice | undefined, title: string) => (invoice?.items ?? []).filter((line) => line.title === title).map((line) => [line.planItemId, line.price, line.fromDate, line.toDate]);

  it("when late September calls arrive with October's and the coupon has one period left, then its last period is October, and the late calls carry September's 50 %", async () => {
    const contract = await contractFrom('2026-09-01');
    const coupon = await halfOff(contract, 3);
    const callsItem = (await api.http().get(`/billing/plans/${contract.planId}`).set(admin()).expect(200)).body.data.items[1].id as string;
    await run(contract, '2026-09-01');
    await calls(contract, '2026-09-20', 4);
    const october = await run(contract, '2026-10-01');
    // September's fee, then October's fee and September's 4 calls (2.00): two periods served.
    expect(couponLines(october, coupon)).toEqual([
      [contract.seatItemId, '-50', '2026-10-01', '2026-10-31'],
      [callsItem, '-1', '2026-09-01', '2026-09-30'],
    ]);
    await calls(contract, '2026-09-25', 6);
    await calls(contract, '2026-10-10', 10);
    const november = await run(contract, '2026-11-01');
    expect(linesOf(november).filter(([title]) => title !== coupon)).toEqual([
      ['Seat fee', '2026-11-01', '2026-11-30', '1', '100'],
      ['API calls: usage of 2026-09-01 to 2026-09-30', '2026-09-01', '2026-09-30', '6', '0.5'],
      ['API calls', '2026-10-01', '2026-10-31', '10', '0.5'],
    ]);
    // The third period: November's fee and October's calls (5.00), with September's late 3.00 at 50 % as well.
    expect(couponLines(november, coupon)).toEqual([
      [contract.seatItemId, '-50', '2026-11-01', '2026-11-30'],
      [callsItem, '-4', '2026-09-01', '2026-10-31'],
    ]);
    const spent = await api.http().get(`/contracts/${contract.contractId}/coupons`).set(system()).expect(200);
    expect(spent.body.data).toMatchObject([{ periodsUsed: 3, active: false }]);

    // Spent, it still discounts late usage of the months it served, and nothing else.
    await calls(contract, '2026-10-12', 2);
    await calls(contract, '2026-11-05', 8);
    const december = await run(contract, '2026-12-01');
    expect(couponLines(december, coupon)).toEqual([[callsItem, '-0.5', '2026-10-01', '2026-10-31']]);
  });

  it("when a draft's usage is edited down and then up, and the draft is synced each time, then its percentage coupon is 50 % of what it bills each time", async () => {
    const contract = await contractFrom('2026-10-01');
    const code = `EVER${randomUUID().slice(0, 8)}`;
    await api.http().post('/coupons').set(admin()).send({ code, percentOff: '50', duration: 'forever' }).expect(201);
    await api.http().post(`/contracts/${contract.contractId}/coupons`).set(system()).send({ code }).expect(201);
    await calls(contract, '2026-10-05', 100);
    await run(contract, '2026-10-01');
    const november = (await run(contract, '2026-11-01'))!;
    const callsItem = november.items.find((line) => line.title === 'API calls')!.planItemId;
    const discountOfCalls = (invoice: Invoice) => invoice.items.filter((line) => line.title === `Coupon ${code}` && line.planItemId === callsItem).map((line) => line.price);
    expect(discountOfCalls(november)).toEqual(['-25']);
    const eventId = (await api.http().get('/usage').query({ metric: contract.metric }).set(system()).expect(200)).body.data.items[0].id as string;

    await api.http().put(`/usage/${eventId}`).set(system()).send({ value: 20 }).expect(200);
    const down = (await api.http().post(`/invoices/${november.id}/sync-items`).set(system()).expect(200)).body.data as Invoice;
    expect(discountOfCalls(down)).toEqual(['-5']);
    await api.http().put(`/usage/${eventId}`).set(system()).send({ value: 300 }).expect(200);
    const up = (await api.http().post(`/invoices/${november.id}/sync-items`).set(system()).expect(200)).body.data as Invoice;
    expect(discountOfCalls(up)).toEqual(['-75']);
    const charges = (await api.http().get(`/contracts/${contract.contractId}/charges`).set(system()).expect(200)).body.data.items as Array<{ invoiceId: string; planItemId: string; amount: string; discount: string }>;
    expect(charges.filter((charge) => charge.invoiceId === november.id && charge.planItemId === callsItem).map((charge) => [charge.amount, charge.discount])).toEqual([['150.00', '75.00']]);
  });

  it('when a catch-up run discounts July to September and VAT rose from 10 % to 20 % on 1 September, then each month is taxed on its discounted amount at its own rate', async () => {
    const contract = await contractFrom('2026-07-01');
    const vat = (await api.http().post(`/contracts/${contract.contractId}/taxes`).set(system()).send({ name: 'VAT', rate: '10' }).expect(201)).body.data;
    await api.http().put(`/contracts/${contract.contractId}/taxes/${vat.id}`).set(admin()).send({ name: 'VAT', rate: '20', effectiveDate: '2026-09-01' }).expect(200);
    const coupon = await halfOff(contract, 3);
    const caughtUp = (await run(contract, '2026-09-01'))!;
    expect(couponLines(caughtUp, coupon)).toEqual([[contract.seatItemId, '-150', '2026-07-01', '2026-09-30']]);
    const raised = (await api.http().post(`/invoices/${caughtUp.id}/raise`).set(system()).send({}).expect(200)).body.data;
    // 10 % of July and August's 100.00 after their 100.00 share of the discount, 20 % of September's 50.00.
    expect([raised.subtotal, raised.taxTotal, raised.total]).toEqual(['150.00', '20.00', '170.00']);
    expect(raised.data.taxes.map((tax: { rate: string; amount: string }) => [tax.rate, tax.amount])).toEqual([
      ['10', '10.00'],
      ['20', '10.00'],
    ]);
  });
});
