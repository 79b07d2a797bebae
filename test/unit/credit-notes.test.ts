import fc from 'fast-check';
import { creditableAmounts, planCreditNote, type CreditableInvoice, type CreditNotePlan, type CreditRequest } from '../../src/domain/credit-notes';
import { AppError } from '../../src/domain/errors';
import { Decimal } from '../../src/domain/money';

type Item = CreditableInvoice['items'][number];
type Tax = CreditableInvoice['taxes'][number];

const round = (value: Decimal) => value.toDecimalPlaces(2, Decimal.ROUND_HALF_UP);
const line = (id: string, quantity: number, price: string, more: Partial<Item> = {}): Item => ({
  id,
  title: id,
  quantity: String(quantity),
  price,
  amount: round(new Decimal(price).times(quantity)).toFixed(2),
  planItemId: null,
  couponId: null,
  fromDate: null,
  toDate: null,
  ...more,
});

/** Whether a tax line applies to an item, as the raise decides it: all items, or those of its plan items. */
const appliesTo = (tax: Pick<Tax, 'appliesTo'>, item: Item) => tax.appliesTo === 'all' || (item.planItemId !== null && tax.appliesTo.includes(item.planItemId));

/** An invoice as raise leaves it: each tax line its rate on the items it applies to (their discounts included), rounded half-up. */
function raised(items: Item[], taxes: Array<Pick<Tax, 'rate' | 'appliesTo'>>): CreditableInvoice {
  const sum = (of: Item[]) => of.reduce((total, item) => total.plus(item.amount), new Decimal(0));
  const lines = taxes.map((tax) => ({ ...tax, amount: round(sum(items.filter((item) => appliesTo(tax, item))).times(tax.rate).dividedBy(100)).toFixed(2) }));
  const subtotal = sum(items);
  const taxTotal = lines.reduce((total, tax) => total.plus(tax.amount), new Decimal(0));
  return { currency: 'EUR', subtotal: subtotal.toFixed(2), taxTotal: taxTotal.toFixed(2), total: subtotal.plus(taxTotal).toFixed(2), items, taxes: lines };
}

/** An invoice of items with no plan item, `rate` % of tax on all of them. */
function invoiceOf(amountsInCents: number[], rate: number): CreditableInvoice {
  return raised(
    amountsInCents.map((cents, i) => line(`itm_${i}`, 1, (cents / 100).toFixed(2), { title: `Item ${i}` })),
    [{ rate: String(rate), appliesTo: 'all' }],
  );
}

/** Applies requests one after another as issued notes would, keeping what each refused. */
function applyAll(invoice: CreditableInvoice, requests: CreditRequest[]) {
  const byItem = new Map<string, string>();
  let subtotal = new Decimal(0);
  let total = new Decimal(0);
  let tax = new Decimal(0);
  const refused: AppError[] = [];
  const plans: CreditNotePlan[] = [];
  for (const request of requests) {
    try {
      const plan = planCreditNote(invoice, { subtotal: subtotal.toFixed(2), total: total.toFixed(2), byItem }, request);
      expect(new Decimal(plan.subtotal).plus(plan.taxTotal).toFixed(2)).toBe(plan.total);
      expect(plan.lines.reduce((sum, line) => sum.plus(line.amount), new Decimal(0)).toFixed(2)).toBe(plan.subtotal);
      for (const line of plan.lines) byItem.set(line.invoiceItemId, new Decimal(byItem.get(line.invoiceItemId) ?? 0).plus(line.amount).toFixed(2));
      subtotal = subtotal.plus(plan.subtotal);
      total = total.plus(plan.total);
      tax = tax.plus(plan.taxTotal);
      plans.push(plan);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      refused.push(error);
    }
  }
  return { byItem, subtotal, total, tax, refused, plans };
}

/** Each request planned against what the ones before it credited; every one must be accepted. */
function applyAllPlans(invoice: CreditableInvoice, requests: CreditRequest[]): CreditNotePlan[] {
  const { plans, refused } = applyAll(invoice, requests);
  expect(refused).toEqual([]);
  return plans;
}

const cents = fc.integer({ min: 1, max: 1_000_000 });
const plainInvoices = fc.tuple(fc.array(cents, { minLength: 1, maxLength: 6 }), fc.constantFrom(0, 7, 19, 20, 21, 8.875)).map(([amounts, rate]) => invoiceOf(amounts, rate));

const planItems = ['pli_a', 'pli_b', 'pli_c'];
const july = { fromDate: '2026-07-01', toDate: '2026-07-31' };
const august = { fromDate: '2026-08-01', toDate: '2026-08-31' };

/**
 * Invoices as runs make them: lines of three plan items over July and August, some plan items with a
 * coupon line off their July lines, and taxes on all items or on some plan items only.
 */
const discountedInvoices = fc
  .record({
    lines: fc.array(fc.record({ planItemId: fc.constantFrom(...planItems), inAugust: fc.boolean(), quantity: fc.integer({ min: 1, max: 20 }), price: fc.integer({ min: 1, max: 100_000 }) }), { minLength: 1, maxLength: 6 }),
    percentOff: fc.tuple(...planItems.map(() => fc.constantFrom(0, 10, 33.33, 50, 100))),
    taxes: fc.array(fc.record({ rate: fc.constantFrom('7', '19', '20', '8.875'), appliesTo: fc.oneof(fc.constant<'all'>('all'), fc.subarray(planItems, { minLength: 1 })) }), { maxLength: 2 }),
  })
  .map(({ lines, percentOff, taxes }) => {
    const items = lines.map((drawn, i) => line(`itm_${i}`, drawn.quantity, (drawn.price / 100).toFixed(2), { planItemId: drawn.planItemId, ...(drawn.inAugust ? august : july) }));
    const coupons = planItems.flatMap((planItemId, i) => {
      const base = items.filter((item) => item.planItemId === planItemId && item.fromDate === july.fromDate).reduce((sum, item) => sum.plus(item.amount), new Decimal(0));
      const off = round(base.times(percentOff[i]!).dividedBy(100));
      return off.isZero() ? [] : [line(`cpl_${i}`, 1, off.negated().toFixed(2), { planItemId, couponId: 'cpn_half', ...july })];
    });
    return raised([...items, ...coupons], taxes);
  });

const anyInvoice = fc.oneof(plainInvoices, discountedInvoices);

/** Notes of lines only: by net amount or by quantity, over any of the invoice's lines (discount lines too). */
const lineRequestsFor = (invoice: CreditableInvoice) =>
  fc.record({
    lines: fc.uniqueArray(
      fc.record({ invoiceItemId: fc.constantFrom(...invoice.items.map((item) => item.id)), by: fc.oneof(fc.record({ amount: cents.map((value) => (value / 100).toFixed(2)) }), fc.record({ quantity: fc.integer({ min: 1, max: 20 }).map(String) })) }).map(({ invoiceItemId, by }) => ({ invoiceItemId, ...by })),
      { selector: (line) => line.invoiceItemId, minLength: 1 },
    ),
  });
const requestsFor = (invoice: CreditableInvoice) => fc.array(fc.oneof(fc.record({ amount: cents.map((value) => (value / 100).toFixed(2)) }), lineRequestsFor(invoice)), { maxLength: 12 });

/** The tax due, each tax line on its own items, once `byItem` is credited: the raise's rule over what is credited. */
function taxDue(invoice: CreditableInvoice, byItem: ReadonlyMap<string, string>): Decimal {
  return invoice.taxes.reduce((sum, tax) => {
    const base = invoice.items.filter((item) => appliesTo(tax, item)).reduce((total, item) => total.plus(byItem.get(item.id) ?? 0), new Decimal(0));
    return sum.plus(Decimal.min(round(base.times(tax.rate).dividedBy(100)), tax.amount));
  }, new Decimal(0));
}

describe('credit note plans', () => {
  it('when any sequence of credit notes is planned, then no item is credited beyond what it charged net of its discounts and the invoice never beyond its subtotal, tax or total', () => {
    fc.assert(
      fc.property(anyInvoice.chain((invoice) => fc.tuple(fc.constant(invoice), requestsFor(invoice))), ([invoice, requests]) => {
        const { byItem, subtotal, total, tax } = applyAll(invoice, requests);
        const creditable = creditableAmounts(invoice);
        for (const item of invoice.items) expect(new Decimal(byItem.get(item.id) ?? 0).lessThanOrEqualTo(creditable.get(item.id)!)).toBe(true);
        expect(total.lessThanOrEqualTo(invoice.total)).toBe(true);
        expect(subtotal.lessThanOrEqualTo(invoice.subtotal)).toBe(true);
        expect(tax.lessThanOrEqualTo(invoice.taxTotal)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('when what is left is credited at the end, in either form, then exactly the subtotal, the tax and the total are credited', () => {
    fc.assert(
      fc.property(anyInvoice.chain((invoice) => fc.tuple(fc.constant(invoice), requestsFor(invoice), fc.boolean())), ([invoice, requests, byAmount]) => {
        const before = applyAll(invoice, requests);
        const left = new Decimal(invoice.total).minus(before.total);
        fc.pre(left.greaterThan(0));
        const creditable = creditableAmounts(invoice);
        const rest: CreditRequest = byAmount
          ? { amount: left.toFixed(2) }
          : { lines: invoice.items.map((item) => ({ invoiceItemId: item.id, amount: creditable.get(item.id)!.minus(before.byItem.get(item.id) ?? 0).toFixed(2) })).filter((line) => new Decimal(line.amount).greaterThan(0)) };
        const after = applyAll(invoice, [...requests, rest]);
        expect(after.refused).toHaveLength(before.refused.length);
        expect([after.subtotal.toFixed(2), after.tax.toFixed(2), after.total.toFixed(2)]).toEqual([invoice.subtotal, invoice.taxTotal, invoice.total]);
      }),
      { numRuns: 300 },
    );
  });

  it('when only lines are credited, then after each note the tax credited is each tax line on its own credited items, rounded per tax line, and lines no tax applies to carry none', () => {
    fc.assert(
      fc.property(anyInvoice.chain((invoice) => fc.tuple(fc.constant(invoice), fc.array(lineRequestsFor(invoice), { maxLength: 8 }))), ([invoice, requests]) => {
        const byItem = new Map<string, string>();
        let subtotal = new Decimal(0);
        let total = new Decimal(0);
        for (const request of requests) {
          let plan: CreditNotePlan;
          try {
            plan = planCreditNote(invoice, { subtotal: subtotal.toFixed(2), total: total.toFixed(2), byItem }, request);
          } catch (error) {
            if (!(error instanceof AppError)) throw error;
            continue;
          }
          for (const line of plan.lines) byItem.set(line.invoiceItemId, new Decimal(byItem.get(line.invoiceItemId) ?? 0).plus(line.amount).toFixed(2));
          subtotal = subtotal.plus(plan.subtotal);
          total = total.plus(plan.total);
          expect(total.minus(subtotal).toFixed(2)).toBe(taxDue(invoice, byItem).toFixed(2));
          const untaxed = plan.lines.every((line) => !invoice.taxes.some((tax) => new Decimal(tax.rate).greaterThan(0) && appliesTo(tax, invoice.items.find((item) => item.id === line.invoiceItemId)!)));
          if (untaxed) expect(plan.taxTotal).toBe('0.00');
        }
      }),
      { numRuns: 300 },
    );
  });

  it('when a quantity of a discounted line is credited, then it credits that part at the price less its share of the line\'s discounts, and the whole quantity exactly what the line charged net of them', () => {
    fc.assert(
      fc.property(
        discountedInvoices.chain((invoice) => {
          const charged = invoice.items.filter((item) => item.couponId === null);
          return fc.tuple(fc.constant(invoice), fc.constantFrom(...charged)).chain(([, item]) => fc.tuple(fc.constant(invoice), fc.constant(item), fc.integer({ min: 1, max: Number(item.quantity) })));
        }),
        ([invoice, item, units]) => {
          const net = creditableAmounts(invoice).get(item.id)!;
          const gross = round(new Decimal(item.price).times(units));
          const paid = gross.minus(round(gross.times(new Decimal(item.amount).minus(net)).dividedBy(item.amount)));
          if (units === Number(item.quantity)) expect(paid.toFixed(2)).toBe(net.toFixed(2));
          const plan = () => planCreditNote(invoice, { subtotal: '0', total: '0', byItem: new Map() }, { lines: [{ invoiceItemId: item.id, quantity: String(units) }] });
          // Units a 100 % coupon paid for credit nothing.
          if (paid.isZero()) expect(plan).toThrow(expect.objectContaining({ items: [expect.objectContaining({ message: expect.stringMatching(/^credits nothing/) })] }));
          else expect(plan().subtotal).toBe(paid.toFixed(2));
        },
      ),
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
    const invoice = raised([line('fee', 1, '100', { title: 'Platform fee' }), line('seats', 5, '10', { title: 'Seats' })], [{ rate: '20', appliesTo: 'all' }]);
    expect([invoice.subtotal, invoice.taxTotal, invoice.total]).toEqual(['150.00', '30.00', '180.00']);
    const notes = applyAllPlans(invoice, [{ lines: [{ invoiceItemId: 'seats', quantity: '2' }] }, { amount: '36.00' }, { amount: '120.00' }]);
    expect(notes.map((plan) => [plan.lines.map((line) => `${line.title} ${line.amount}`), plan.subtotal, plan.taxTotal, plan.total])).toEqual([
      [['Seats 20.00'], '20.00', '4.00', '24.00'],
      [['Platform fee 23.08', 'Seats 6.92'], '30.00', '6.00', '36.00'],
      [['Platform fee 76.92', 'Seats 23.08'], '100.00', '20.00', '120.00'],
    ]);
  });

  it('when a line credits a quantity, then its amount is that quantity at the item price, rounded to the minor unit', () => {
    const invoice = raised([line('itm_a', 3, '10', { title: 'Seats' })], []);
    expect(planCreditNote(invoice, { subtotal: '0', total: '0', byItem: new Map() }, { lines: [{ invoiceItemId: 'itm_a', quantity: '1.5' }] })).toMatchObject({
      lines: [{ invoiceItemId: 'itm_a', quantity: '1.5', amount: '15.00' }],
      total: '15.00',
    });
    expect(() => planCreditNote(invoice, { subtotal: '0', total: '0', byItem: new Map() }, { lines: [{ invoiceItemId: 'itm_a', quantity: '4' }] })).toThrow(expect.objectContaining({ kind: 'validation' }));
  });

  it('when a quantity is too small to come to a minor unit at the item price, then 400 says it rounds to nothing', () => {
    const yen: CreditableInvoice = { currency: 'JPY', subtotal: '3', taxTotal: '0', total: '3', items: [{ ...line('itm_calls', 10, '0.3'), amount: '3' }], taxes: [] };
    expect(() => planCreditNote(yen, { subtotal: '0', total: '0', byItem: new Map() }, { lines: [{ invoiceItemId: 'itm_calls', quantity: '1' }] })).toThrow(
      expect.objectContaining({ kind: 'validation', items: [expect.objectContaining({ path: 'body.items.0.quantity', message: 'credits nothing: 1 × 0.3 rounds to 0 JPY' })] }),
    );
    expect(planCreditNote(yen, { subtotal: '0', total: '0', byItem: new Map() }, { lines: [{ invoiceItemId: 'itm_calls', quantity: '5' }] })).toMatchObject({ total: '2' });
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

  it('when 5 of 10 seats at 10.00 are credited on an invoice whose 50 % coupon took 50.00 off them, then the note credits what they paid, 25.00, with their 20 % VAT', () => {
    const invoice = raised(
      [line('seats', 10, '10', { title: 'Seats', planItemId: 'pli_seats', ...july }), line('coupon', 1, '-50', { title: 'Coupon HALF', planItemId: 'pli_seats', couponId: 'cpn_half', ...july })],
      [{ rate: '20', appliesTo: ['pli_seats'] }],
    );
    expect([invoice.subtotal, invoice.taxTotal, invoice.total]).toEqual(['50.00', '10.00', '60.00']);
    const notes = applyAllPlans(invoice, [{ lines: [{ invoiceItemId: 'seats', quantity: '5' }] }, { lines: [{ invoiceItemId: 'seats', quantity: '5' }] }]);
    expect(notes.map((plan) => [plan.lines.map((line) => `${line.title} ${line.quantity} ${line.amount}`), plan.subtotal, plan.taxTotal, plan.total])).toEqual([
      [['Seats 5 25.00'], '25.00', '5.00', '30.00'],
      [['Seats 5 25.00'], '25.00', '5.00', '30.00'],
    ]);
    const credited = { subtotal: '50.00', total: '60.00', byItem: new Map([['seats', '50.00']]) };
    expect(() => planCreditNote(invoice, credited, { lines: [{ invoiceItemId: 'seats', quantity: '1' }] })).toThrow(/exceeds what is left to credit on it, 0.00 EUR/);
    expect(() => planCreditNote(invoice, { subtotal: '0', total: '0', byItem: new Map() }, { lines: [{ invoiceItemId: 'seats', amount: '50.01' }] })).toThrow(/exceeds what is left to credit on it, 50.00 EUR/);
  });

  it('when a tax applies to one plan item only, then a note of the other item credits no tax, one of the taxed item credits its rate, and an amount takes the tax of what is left', () => {
    const invoice = raised(
      [line('fee', 1, '100', { title: 'Platform fee', planItemId: 'pli_fee' }), line('support', 1, '50', { title: 'Support', planItemId: 'pli_support' })],
      [{ rate: '20', appliesTo: ['pli_fee'] }],
    );
    expect([invoice.subtotal, invoice.taxTotal, invoice.total]).toEqual(['150.00', '20.00', '170.00']);
    const notes = applyAllPlans(invoice, [{ lines: [{ invoiceItemId: 'support', amount: '50.00' }] }, { lines: [{ invoiceItemId: 'fee', amount: '40.00' }] }, { amount: '36.00' }, { amount: '36.00' }]);
    expect(notes.map((plan) => [plan.lines.map((line) => `${line.title} ${line.amount}`), plan.subtotal, plan.taxTotal, plan.total])).toEqual([
      [['Support 50.00'], '50.00', '0.00', '50.00'],
      [['Platform fee 40.00'], '40.00', '8.00', '48.00'],
      [['Platform fee 30.00'], '30.00', '6.00', '36.00'],
      [['Platform fee 30.00'], '30.00', '6.00', '36.00'],
    ]);
  });

  it('when a plan change gave back more tax than the invoice owed, then a note of an untaxed line credits its amount with no tax, never a tax below nothing', () => {
    // A new fee of 3.00, untaxed, and the old plan's taxed fee of 3.00 given back: the invoice's tax is -0.59.
    const invoice = raised(
      [line('new', 1, '3', { title: 'New fee', planItemId: 'pli_new' }), line('unused', 1, '-3', { title: 'Unused old fee', planItemId: 'pli_old' })],
      [{ rate: '19.6', appliesTo: ['pli_old'] }],
    );
    expect([invoice.subtotal, invoice.taxTotal, invoice.total]).toEqual(['0.00', '-0.59', '-0.59']);
    const withRoom = { ...invoice, total: '3.00' };
    const [note] = applyAllPlans(withRoom, [{ lines: [{ invoiceItemId: 'new', quantity: '0.25' }] }]);
    expect([note!.subtotal, note!.taxTotal, note!.total]).toEqual(['0.75', '0.00', '0.75']);
  });

  it('when a plan change gave back more tax than the invoice owed, then an amount credits net only, never a tax below nothing', () => {
    // Four untaxed days of 0.01, and the old plan's taxed fee of 0.02 given back at 25 %: the invoice's tax
    // is -0.01 (-0.005 rounded away from nothing), its total 0.01.
    const invoice = raised(
      [1, 2, 3, 4].map((day) => line(`day${day}`, 1, '0.01', { title: `Fee, day ${day}`, planItemId: 'pli_new' })).concat(line('unused', 1, '-0.02', { title: 'Unused old fee', planItemId: 'pli_old' })),
      [{ rate: '25', appliesTo: ['pli_old'] }],
    );
    expect([invoice.subtotal, invoice.taxTotal, invoice.total]).toEqual(['0.02', '-0.01', '0.01']);
    const [note] = applyAllPlans(invoice, [{ amount: '0.01' }]);
    expect([note!.subtotal, note!.taxTotal, note!.total]).toEqual(['0.01', '0.00', '0.01']);
  });

  it('when a plan change left one tax line below nothing, then a note of an item another tax line taxes credits that line\'s tax in full', () => {
    // The old plan's fee given back (-6.00) is all that 10 % on it applies to: that line is -0.60. 20 % on all
    // items is 20 % of 94.00. A note of 25.00 of the new fee credits 20 % of it, 5.00, not 5.00 - 0.60.
    const invoice = raised(
      [line('march', 1, '50', { title: 'New fee, March', planItemId: 'pli_new' }), line('april', 1, '50', { title: 'New fee, April', planItemId: 'pli_new' }), line('unused', 1, '-6', { title: 'Unused old fee', planItemId: 'pli_old' })],
      [
        { rate: '10', appliesTo: ['pli_old'] },
        { rate: '20', appliesTo: 'all' },
      ],
    );
    expect([invoice.subtotal, invoice.taxTotal, invoice.total]).toEqual(['94.00', '18.20', '112.20']);
    const [note] = applyAllPlans(invoice, [{ lines: [{ invoiceItemId: 'march', quantity: '0.5' }] }]);
    expect([note!.subtotal, note!.taxTotal, note!.total]).toEqual(['25.00', '5.00', '30.00']);
  });

  it('when an item has two tax lines, then each is rounded on its own, as the raise rounds them', () => {
    const invoice = raised([line('itm_a', 1, '1.10')], [
      { rate: '5', appliesTo: 'all' },
      { rate: '5', appliesTo: 'all' },
    ]);
    // 5 % of 1.10 is 0.055: 0.06 each, where 10 % at once would be 0.11.
    expect(invoice.taxTotal).toBe('0.12');
    expect(planCreditNote(invoice, { subtotal: '0', total: '0', byItem: new Map() }, { lines: [{ invoiceItemId: 'itm_a', amount: '1.10' }] })).toMatchObject({ subtotal: '1.10', taxTotal: '0.12', total: '1.22' });
  });
});
