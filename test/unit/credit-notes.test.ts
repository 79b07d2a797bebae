import fc from 'fast-check';
import { planCreditNote, type CreditableInvoice, type CreditNotePlan, type CreditRequest } from '../../src/domain/credit-notes';
import { AppError } from '../../src/domain/errors';
import { Decimal } from '../../src/domain/money';

/** An invoice as raise leaves it: item amounts rounded to cents, tax over the subtotal at `rate` %. */
function invoiceOf(amountsInCents: number[], rate: number): CreditableInvoice {
  const items = amountsInCents.map((cents, i) => ({ id: `itm_${i}`, title: `Item ${i}`, quantity: '1', price: (cents / 100).toFixed(2), amount: (cents / 100).toFixed(2) }));
  const subtotal = new Decimal(amountsInCents.reduce((sum, cents) => sum + cents, 0)).dividedBy(100);
  const tax = subtotal.times(rate).dividedBy(100).toDecimalPlaces(2, Decimal.ROUND_HALF_UP);
  return { currency: 'EUR', subtotal: subtotal.toFixed(2), taxTotal: tax.toFixed(2), total: subtotal.plus(tax).toFixed(2), items };
}

/** Applies requests one after another as issued notes would, keeping what each refused. */
function applyAll(invoice: CreditableInvoice, requests: CreditRequest[]) {
  const byItem = new Map<string, string>();
  let subtotal = new Decimal(0);
  let total = new Decimal(0);
  let tax = new Decimal(0);
  const refused: AppError[] = [];
  for (const request of requests) {
    try {
      const plan = planCreditNote(invoice, { subtotal: subtotal.toFixed(2), total: total.toFixed(2), byItem }, request);
      expect(new Decimal(plan.subtotal).plus(plan.taxTotal).toFixed(2)).toBe(plan.total);
      expect(plan.lines.reduce((sum, line) => sum.plus(line.amount), new Decimal(0)).toFixed(2)).toBe(plan.subtotal);
      for (const line of plan.lines) byItem.set(line.invoiceItemId, new Decimal(byItem.get(line.invoiceItemId) ?? 0).plus(line.amount).toFixed(2));
      subtotal = subtotal.plus(plan.subtotal);
      total = total.plus(plan.total);
      tax = tax.plus(plan.taxTotal);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      refused.push(error);
    }
  }
  return { byItem, subtotal, total, tax, refused };
}

/** Each request planned against what the ones before it credited; every one must be accepted. */
function applyAllPlans(invoice: CreditableInvoice, requests: CreditRequest[]): CreditNotePlan[] {
  const byItem = new Map<string, string>();
  let subtotal = new Decimal(0);
  let total = new Decimal(0);
  return requests.map((request) => {
    const plan = planCreditNote(invoice, { subtotal: subtotal.toFixed(2), total: total.toFixed(2), byItem }, request);
    for (const line of plan.lines) byItem.set(line.invoiceItemId, new Decimal(byItem.get(line.invoiceItemId) ?? 0).plus(line.amount).toFixed(2));
    subtotal = subtotal.plus(plan.subtotal);
    total = total.plus(plan.total);
    return plan;
  });
}

const cents = fc.integer({ min: 1, max: 1_000_000 });
const invoices = fc.tuple(fc.array(cents, { minLength: 1, maxLength: 6 }), fc.constantFrom(0, 7, 19, 20, 21, 8.875));
const requestsFor = (items: number) =>
  fc.array(
    fc.oneof(
      fc.record({ amount: cents.map((value) => (value / 100).toFixed(2)) }),
      fc.record({ lines: fc.uniqueArray(fc.record({ invoiceItemId: fc.integer({ min: 0, max: items - 1 }).map((i) => `itm_${i}`), amount: cents.map((value) => (value / 100).toFixed(2)) }), { selector: (line) => line.invoiceItemId, minLength: 1 }) }),
    ),
    { maxLength: 12 },
  );

describe('credit note plans', () => {
  it('when any sequence of credit notes is planned, then no item is credited beyond its amount and the invoice never beyond its subtotal, tax or total', () => {
    fc.assert(
      fc.property(invoices.chain(([amounts, rate]) => fc.tuple(fc.constant(invoiceOf(amounts, rate)), requestsFor(amounts.length))), ([invoice, requests]) => {
        const { byItem, subtotal, total, tax } = applyAll(invoice, requests);
        for (const item of invoice.items) expect(new Decimal(byItem.get(item.id) ?? 0).lessThanOrEqualTo(item.amount)).toBe(true);
        expect(total.lessThanOrEqualTo(invoice.total)).toBe(true);
        expect(subtotal.lessThanOrEqualTo(invoice.subtotal)).toBe(true);
        expect(tax.lessThanOrEqualTo(invoice.taxTotal)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('when what is left is credited at the end, in either form, then exactly the subtotal, the tax and the total are credited', () => {
    fc.assert(
      fc.property(invoices.chain(([amounts, rate]) => fc.tuple(fc.constant(invoiceOf(amounts, rate)), requestsFor(amounts.length), fc.boolean())), ([invoice, requests, byAmount]) => {
        const before = applyAll(invoice, requests);
        const left = new Decimal(invoice.total).minus(before.total);
        fc.pre(left.greaterThan(0));
        const rest: CreditRequest = byAmount
          ? { amount: left.toFixed(2) }
          : { lines: invoice.items.map((item) => ({ invoiceItemId: item.id, amount: new Decimal(item.amount).minus(before.byItem.get(item.id) ?? 0).toFixed(2) })).filter((line) => new Decimal(line.amount).greaterThan(0)) };
        const after = applyAll(invoice, [...requests, rest]);
        expect(after.refused).toHaveLength(before.refused.length);
        expect([after.subtotal.toFixed(2), after.tax.toFixed(2), after.total.toFixed(2)]).toEqual([invoice.subtotal, invoice.taxTotal, invoice.total]);
      }),
      { numRuns: 300 },
    );
  });

  it('when a credit note asks for more than is left, then it is refused as a conflict and credits nothing', () => {
    const invoice = invoiceOf([10_000, 5_000], 20);
    expect(invoice.total).toBe('180.00');
    const first = planCreditNote(invoice, { subtotal: '0', total: '0', byItem: new Map() }, { amount: '120.00' });
    expect(first).toMatchObject({ subtotal: '100.00', taxTotal: '20.00', total: '120.00' });
    // The net is shared in proportion to what is left on each item: 100 and 50 → 66.67 and 33.33.
    expect(first.lines.map((line) => line.amount)).toEqual(['66.67', '33.33']);
    const credited = { subtotal: first.subtotal, total: first.total, byItem: new Map(first.lines.map((line) => [line.invoiceItemId, line.amount])) };
    expect(() => planCreditNote(invoice, credited, { amount: '60.01' })).toThrow(expect.objectContaining({ kind: 'conflict' }));
    expect(() => planCreditNote(invoice, credited, { lines: [{ invoiceItemId: 'itm_0', amount: '33.34' }] })).toThrow(/exceeds what is left to credit on it, 33.33 EUR/);
    expect(planCreditNote(invoice, credited, { amount: '60.00' })).toMatchObject({ subtotal: '50.00', taxTotal: '10.00', total: '60.00' });
  });

  it('when the worked example of the adjustments guide is planned, then each note credits what the guide says', () => {
    const invoice: CreditableInvoice = {
      currency: 'EUR',
      subtotal: '150.00',
      taxTotal: '30.00',
      total: '180.00',
      items: [
        { id: 'fee', title: 'Platform fee', quantity: '1', price: '100', amount: '100.00' },
        { id: 'seats', title: 'Seats', quantity: '5', price: '10', amount: '50.00' },
      ],
    };
    const notes = applyAllPlans(invoice, [{ lines: [{ invoiceItemId: 'seats', quantity: '2' }] }, { amount: '36.00' }, { amount: '120.00' }]);
    expect(notes.map((plan) => [plan.lines.map((line) => `${line.title} ${line.amount}`), plan.subtotal, plan.taxTotal, plan.total])).toEqual([
      [['Seats 20.00'], '20.00', '4.00', '24.00'],
      [['Platform fee 23.08', 'Seats 6.92'], '30.00', '6.00', '36.00'],
      [['Platform fee 76.92', 'Seats 23.08'], '100.00', '20.00', '120.00'],
    ]);
  });

  it('when a line credits a quantity, then its amount is that quantity at the item price, rounded to the minor unit', () => {
    const invoice: CreditableInvoice = { currency: 'EUR', subtotal: '30.00', taxTotal: '0.00', total: '30.00', items: [{ id: 'itm_a', title: 'Seats', quantity: '3', price: '10', amount: '30.00' }] };
    expect(planCreditNote(invoice, { subtotal: '0', total: '0', byItem: new Map() }, { lines: [{ invoiceItemId: 'itm_a', quantity: '1.5' }] })).toMatchObject({
      lines: [{ invoiceItemId: 'itm_a', quantity: '1.5', amount: '15.00' }],
      total: '15.00',
    });
    expect(() => planCreditNote(invoice, { subtotal: '0', total: '0', byItem: new Map() }, { lines: [{ invoiceItemId: 'itm_a', quantity: '4' }] })).toThrow(expect.objectContaining({ kind: 'validation' }));
  });

  it('when an amount has more decimals than the currency, names another invoice\'s item or repeats an item, then 400 naming the field', () => {
    const invoice = invoiceOf([1_000], 0);
    const none = { subtotal: '0', total: '0', byItem: new Map<string, string>() };
    expect(() => planCreditNote(invoice, none, { amount: '1.001' })).toThrow(expect.objectContaining({ kind: 'validation', items: [expect.objectContaining({ path: 'body.amount' })] }));
    expect(() => planCreditNote(invoice, none, { lines: [{ invoiceItemId: 'itm_other', amount: '1' }] })).toThrow(expect.objectContaining({ items: [expect.objectContaining({ path: 'body.items.0.invoiceItemId' })] }));
    expect(() =>
      planCreditNote(invoice, none, {
        lines: [
          { invoiceItemId: 'itm_0', amount: '1' },
          { invoiceItemId: 'itm_0', amount: '2' },
        ],
      }),
    ).toThrow(expect.objectContaining({ items: [expect.objectContaining({ path: 'body.items.1.invoiceItemId' })] }));
  });
});
