import fc from 'fast-check';
import { couldTie, dimensionalProblems, dimensionsKey, type DimensionalPrice, type DimensionMatch } from '../../src/domain/dimensional-prices';
import { Decimal } from '../../src/domain/money';
import { priceItem, type PricedPlanItem } from '../../src/domain/pricing';
import { rateDimensionalUsage, type Charge, type ChargeLedger, type RatedCharge, type RatedItem, type UsageWindow } from '../../src/domain/rating';

const KEYS = ['model', 'direction', 'project', 'region'];
const VALUES = ['a', 'b', 'c'];
const window: UsageWindow = { planItemId: 'tok', meterId: 'mtr', period: { from: '2026-10-01', to: '2026-10-31' }, from: '2026-10-01', to: '2026-10-31' };
const noLedger: ChargeLedger = { fees: [], usage: [] };
const ledgerOf = (charges: Charge[]): ChargeLedger => ({ fees: [], usage: charges });
const runs = { numRuns: Number(process.env.DIMENSIONAL_PROPERTY_RUNS ?? 300), ...(process.env.DIMENSIONAL_PROPERTY_SEED ? { seed: Number(process.env.DIMENSIONAL_PROPERTY_SEED) } : {}) };

/** A line's amount as an invoice computes it: quantity × price, half-up to cents. */
const amountOf = (line: RatedCharge['line']) => new Decimal(line.quantity).times(line.price).toDecimalPlaces(2, Decimal.ROUND_HALF_UP);

const priceArb: fc.Arbitrary<PricedPlanItem> = fc.oneof(
  fc.constantFrom('0.0003', '0.001', '0.015', '0.5', '2', '7.25').map((unitPrice): PricedPlanItem => ({ pricingModel: 'per_unit', unitPrice })),
  fc.constantFrom('0.01', '0.002').map((unitPrice): PricedPlanItem => ({ pricingModel: 'graduated', tiers: [{ upTo: '1000', unitPrice }, { upTo: null, unitPrice: '0.0007', flatFee: '3' }] })),
  fc.constant<PricedPlanItem>({ pricingModel: 'volume', tiers: [{ upTo: '5000', unitPrice: '0.004' }, { upTo: null, unitPrice: '0.001' }] }),
);

const matchArb = (dims: string[]) => fc.subarray(dims, { minLength: 1 }).chain((keys) => fc.tuple(...keys.map(() => fc.constantFrom(...VALUES))).map((values) => Object.fromEntries(keys.map((key, i) => [key, values[i]!])) as DimensionMatch));

/** A combination's usage: now and then below zero (events of negative value outweighing the rest). */
const usageQuantity = fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 100_000 }) }, { weight: 1, arbitrary: fc.integer({ min: -100_000, max: -1 }) });

/** A plan item on a meter with some of KEYS, with non-tying entries, perhaps a default and a split, and usage per combination. */
const scenarioArb = fc
  .subarray(KEYS, { minLength: 1 })
  .chain((dims) =>
    fc.record({
      dims: fc.constant(dims),
      entries: fc.array(fc.record({ match: matchArb(dims), price: priceArb }), { maxLength: 8 }),
      fallback: fc.option(priceArb, { nil: undefined }),
      presentation: fc.subarray(dims),
      usage: fc.array(fc.record({ values: fc.tuple(...dims.map(() => fc.option(fc.constantFrom(...VALUES), { nil: null, freq: 5 }))), quantity: usageQuantity }), { maxLength: 30 }),
      extra: fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 30, maxLength: 30 }),
    }),
  )
  .map((scenario) => {
    // Keep the entries that tie with none kept before.
    const entries: DimensionalPrice[] = [];
    for (const { match, price } of scenario.entries) if (!entries.some((kept) => couldTie(kept.match, match))) entries.push({ match, ...price });
    // One row per combination, as the aggregation answers.
    const rows = new Map<string, { values: Record<string, string | null>; quantity: number }>();
    scenario.usage.forEach(({ values, quantity }) => {
      const combination = Object.fromEntries(scenario.dims.map((key, i) => [key, values[i]!]));
      rows.set(JSON.stringify(combination), { values: combination, quantity });
    });
    return { ...scenario, entries, rows: [...rows.values()] };
  });

type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

function itemOf(scenario: Scenario): RatedItem {
  const own = scenario.fallback ?? ({ pricingModel: null } as unknown as PricedPlanItem);
  return { id: 'tok', name: 'Tokens', meterId: 'mtr', effectiveFrom: null, effectiveTo: null, ...own, dimensionalPrices: scenario.entries, presentationGroupBy: scenario.presentation.length > 0 ? scenario.presentation : null };
}

/** The oracle: each combination to the matching entry naming the most keys, else the default, else its own unpriced group. */
function oracle(scenario: Scenario, rows: Array<{ values: Record<string, string | null>; quantity: number }>) {
  const groups = new Map<string, { price: PricedPlanItem | null; quantity: number; parts: Map<string, number> }>();
  for (const row of rows) {
    const matching = scenario.entries.filter((entry) => Object.entries(entry.match).every(([key, value]) => row.values[key] === value));
    const most = Math.max(-1, ...matching.map((entry) => Object.keys(entry.match).length));
    const best = matching.filter((entry) => Object.keys(entry.match).length === most);
    expect(best.length).toBeLessThanOrEqual(1);
    const [key, price] = best[0] ? [dimensionsKey(best[0].match), best[0] as PricedPlanItem] : scenario.fallback ? ['{}', scenario.fallback] : [dimensionsKey(row.values), null];
    const group = groups.get(key) ?? { price, quantity: 0, parts: new Map() };
    group.quantity += row.quantity;
    const part = JSON.stringify(scenario.presentation.map((name) => row.values[name]));
    group.parts.set(part, (group.parts.get(part) ?? 0) + row.quantity);
    groups.set(key, group);
  }
  return new Map(
    [...groups].map(([key, group]) => {
      const unit = group.price?.pricingModel === 'per_unit' ? new Decimal(group.price.unitPrice!) : null;
      // A per-unit price gives units below zero back; tiers price usage below zero as none.
      const amount = group.price === null ? new Decimal(0) : unit ? unit.times(group.quantity).toDecimalPlaces(2, Decimal.ROUND_HALF_UP) : new Decimal(priceItem(group.price, Math.max(group.quantity, 0), 'USD').amount);
      return [key, { ...group, amount }];
    }),
  );
}

describe('prices per dimension value', () => {
  it('when usage per combination is rated, then each entry with usage bills its total at its price, presentation lines adding up exactly', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        const combinations = scenario.rows.map((row) => ({ values: row.values, value: String(row.quantity) }));
        const rated = rateDimensionalUsage({ currency: 'USD', items: [itemOf(scenario)] }, window, { groupBy: scenario.dims, aggregation: 'sum', combinations }, noLedger);
        const expected = oracle(scenario, scenario.rows);
        const charges = rated.flatMap((one) => one.charges);
        expect(new Set(charges.map((charge) => charge.dimensionsKey))).toEqual(new Set(expected.keys()));
        expect(charges).toHaveLength(expected.size);
        for (const charge of charges) {
          const entry = expected.get(charge.dimensionsKey!)!;
          expect(charge).toMatchObject({ kind: 'usage', planItemId: 'tok', quantity: String(entry.quantity), amount: entry.amount.toFixed(2) });
        }
        // Lines in entry order: a charge opens an entry's lines, the lines after it without one are its splits.
        const byEntry = new Map<string, RatedCharge[]>();
        let current = '';
        for (const one of rated) {
          if (one.charges[0]) current = one.charges[0].dimensionsKey!;
          byEntry.set(current, [...(byEntry.get(current) ?? []), one]);
        }
        for (const [key, lines] of byEntry) {
          const entry = expected.get(key)!;
          const match = JSON.parse(key) as Record<string, string | null>;
          const total = lines.reduce((sum, one) => sum.plus(amountOf(one.line)), new Decimal(0));
          expect(total.toFixed(2)).toBe(entry.amount.toFixed(2));
          expect(lines.reduce((sum, one) => sum.plus(one.line.quantity), new Decimal(0)).toFixed()).toBe(String(entry.quantity));
          if (scenario.presentation.length === 0) {
            expect(lines).toHaveLength(1);
            expect(lines[0]!.line.dimensions).toEqual(match);
            continue;
          }
          // One line per presentation value, its quantity that value's, its amount its share within a cent of the exact proportion.
          const partOf = (one: RatedCharge) => JSON.stringify(scenario.presentation.map((name) => one.line.dimensions![name]));
          expect(new Set(lines.map(partOf))).toEqual(new Set(entry.parts.keys()));
          expect(lines).toHaveLength(entry.parts.size);
          for (const one of lines) {
            const part = partOf(one);
            expect(one.line.quantity).toBe(String(entry.parts.get(part)));
            expect(one.line.dimensions).toMatchObject(match);
            const exact = entry.quantity === 0 ? entry.amount.dividedBy(lines.length) : entry.amount.times(entry.parts.get(part)!).dividedBy(entry.quantity);
            expect(amountOf(one.line).minus(exact).abs().lessThan('0.01')).toBe(true);
          }
        }
      }),
      runs,
    );
  });

  it('when usage grows after a charge, then a second rating charges each entry only its difference, and nothing for entries that did not change', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        const item = itemOf(scenario);
        const meter = { groupBy: scenario.dims, aggregation: 'sum' };
        const first = rateDimensionalUsage({ currency: 'USD', items: [item] }, window, { ...meter, combinations: scenario.rows.map((row) => ({ values: row.values, value: String(row.quantity) })) }, noLedger);
        const grown = scenario.rows.map((row, i) => ({ values: row.values, quantity: row.quantity + scenario.extra[i]! }));
        const second = rateDimensionalUsage({ currency: 'USD', items: [item] }, window, { ...meter, combinations: grown.map((row) => ({ values: row.values, value: String(row.quantity) })) }, ledgerOf(first.flatMap((one) => one.charges)));
        const before = oracle(scenario, scenario.rows);
        const after = oracle(scenario, grown);
        const deltas = second.flatMap((one) => one.charges);
        expect(second.every((one) => one.charges.length === 1 && one.line.title.endsWith(': usage of 2026-10-01 to 2026-10-31'))).toBe(true);
        for (const [key, entry] of after) {
          const delta = deltas.filter((charge) => charge.dimensionsKey === key);
          const was = before.get(key)!;
          if (entry.quantity === was.quantity) {
            expect(delta).toEqual([]);
            continue;
          }
          expect(delta).toHaveLength(1);
          expect(delta[0]!.quantity).toBe(String(entry.quantity - was.quantity));
          // A per-unit entry charges its new units; any other the difference of its rated totals.
          const unit = entry.price?.pricingModel === 'per_unit' ? new Decimal(entry.price.unitPrice!) : null;
          const owed = unit ? unit.times(entry.quantity - was.quantity).toDecimalPlaces(2, Decimal.ROUND_HALF_UP) : entry.amount.minus(was.amount);
          expect(delta[0]!.amount).toBe(owed.toFixed(2));
          expect(amountOf(second.find((one) => one.charges[0] === delta[0])!.line).toFixed(2)).toBe(owed.toFixed(2));
        }
        // A third rating with nothing new charges nothing.
        const third = rateDimensionalUsage({ currency: 'USD', items: [item] }, window, { ...meter, combinations: grown.map((row) => ({ values: row.values, value: String(row.quantity) })) }, ledgerOf([...first, ...second].flatMap((one) => one.charges)));
        expect(third).toEqual([]);
      }),
      runs,
    );
  });

  it('when two matches are compared, then they could tie exactly when some combination of values matches both on as many keys', () => {
    const matchOver = matchArb(KEYS);
    fc.assert(
      fc.property(matchOver, matchOver, (a, b) => {
        // Brute force: every combination of the four keys over the values.
        let tie = false;
        const combinations = KEYS.reduce<Array<Record<string, string>>>((all, key) => all.flatMap((partial) => VALUES.map((value) => ({ ...partial, [key]: value }))), [{}]);
        for (const combination of combinations) {
          const matches = (match: DimensionMatch) => Object.entries(match).every(([key, value]) => combination[key] === value);
          if (matches(a) && matches(b) && Object.keys(a).length === Object.keys(b).length) tie = true;
        }
        expect(couldTie(a, b)).toBe(tie);
        const problems = dimensionalProblems({ dimensionalPrices: [{ match: a, pricingModel: 'per_unit', unitPrice: '1' }, { match: b, pricingModel: 'per_unit', unitPrice: '2' }] }, { groupBy: KEYS, aggregation: 'sum' });
        expect(problems.some((problem) => problem.message.includes(' tie: '))).toBe(tie);
      }),
      runs,
    );
  });

  it('when the meter cannot fold or the keys are not its dimensions, then the problems name where', () => {
    const entry = { match: { model: 'a' }, pricingModel: 'per_unit' as const, unitPrice: '1' };
    expect(dimensionalProblems({ dimensionalPrices: [entry] }, { groupBy: ['model'], aggregation: 'latest' })).toEqual([{ path: 'dimensionalPrices', message: expect.stringContaining('aggregates by latest') }]);
    expect(dimensionalProblems({ dimensionalPrices: [entry] }, { groupBy: ['model'], aggregation: 'unique_count' })[0]!.message).toContain('need a sum, count or max meter');
    // Split alone, the lines need parts that add up: max does not, whatever an entry's price would take.
    expect(dimensionalProblems({ presentationGroupBy: ['model'] }, { groupBy: ['model'], aggregation: 'unique_count' })).toEqual([{ path: 'presentationGroupBy', message: expect.stringContaining('it needs a sum or count meter') }]);
    expect(dimensionalProblems({ dimensionalPrices: [{ ...entry, match: { region: 'eu' } }], presentationGroupBy: ['project'] }, { groupBy: ['model'], aggregation: 'sum' }).map((problem) => problem.path)).toEqual(['presentationGroupBy.0', 'dimensionalPrices.0.match.region']);
    expect(dimensionalProblems({ dimensionalPrices: [entry], presentationGroupBy: ['model'] }, { groupBy: ['model'], aggregation: 'max' }).map((problem) => problem.path)).toEqual(['presentationGroupBy']);
  });

  it('when an item has its own price alone and presentationGroupBy, then all its usage is split by those values', () => {
    const item: RatedItem = { id: 'tok', name: 'Tokens', meterId: 'mtr', effectiveFrom: null, effectiveTo: null, pricingModel: 'per_unit', unitPrice: '0.01', presentationGroupBy: ['project'] };
    const combinations = [
      { values: { model: 'a', project: 'beta' }, value: '101' },
      { values: { model: 'b', project: 'alpha' }, value: '100' },
      { values: { model: 'b', project: 'beta' }, value: '100' },
    ];
    const rated = rateDimensionalUsage({ currency: 'USD', items: [item] }, window, { groupBy: ['model', 'project'], aggregation: 'sum', combinations }, noLedger);
    // 301 units at 0.01 is 3.01, shared 100 : 201.
    expect(rated.map((one) => [one.line.title, one.line.quantity, amountOf(one.line).toFixed(2), one.line.dimensions])).toEqual([
      ['Tokens — project alpha', '100', '1.00', { project: 'alpha' }],
      ['Tokens — project beta', '201', '2.01', { project: 'beta' }],
    ]);
    expect(rated.flatMap((one) => one.charges)).toEqual([expect.objectContaining({ quantity: '301', amount: '3.01', dimensionsKey: '{}' })]);
  });

  it('when usage of a value no line charged arrives after its window was charged, then its first line is late usage: one line naming the window, not split', () => {
    const item: RatedItem = {
      id: 'tok',
      name: 'Tokens',
      meterId: 'mtr',
      effectiveFrom: null,
      effectiveTo: null,
      ...({ pricingModel: null } as unknown as PricedPlanItem),
      dimensionalPrices: [
        { match: { model: 'a' }, pricingModel: 'per_unit', unitPrice: '0.01' },
        { match: { model: 'b' }, pricingModel: 'per_unit', unitPrice: '0.02' },
      ],
      presentationGroupBy: ['project'],
    };
    const meter = { groupBy: ['model', 'project'], aggregation: 'sum' };
    const first = rateDimensionalUsage({ currency: 'USD', items: [item] }, window, { ...meter, combinations: [{ values: { model: 'a', project: 'alpha' }, value: '100' }] }, noLedger);
    expect(first.map((one) => one.line.title)).toEqual(['Tokens — model a, project alpha']);
    const combinations = [
      { values: { model: 'a', project: 'alpha' }, value: '100' },
      { values: { model: 'b', project: 'alpha' }, value: '50' },
      { values: { model: 'b', project: 'beta' }, value: '25' },
    ];
    const late = rateDimensionalUsage({ currency: 'USD', items: [item] }, window, { ...meter, combinations }, ledgerOf(first.flatMap((one) => one.charges)));
    expect(late.map((one) => [one.line.title, one.line.quantity, amountOf(one.line).toFixed(2), one.line.dimensions])).toEqual([
      ['Tokens — model b: usage of 2026-10-01 to 2026-10-31', '75', '1.50', { model: 'b' }],
    ]);
    expect(late.flatMap((one) => one.charges)).toEqual([expect.objectContaining({ quantity: '75', amount: '1.50', dimensionsKey: dimensionsKey({ model: 'b' }) })]);
  });

  it('when the split values\' usage adds up to nothing or to less, then the lines share what the entry rates (equally, or in proportion) instead of failing', () => {
    const item: RatedItem = {
      id: 'tok', name: 'Tokens', meterId: 'mtr', effectiveFrom: null, effectiveTo: null, pricingModel: 'per_unit', unitPrice: '0.5', presentationGroupBy: ['direction'],
      dimensionalPrices: [{ match: { model: 'large' }, pricingModel: 'graduated', tiers: [{ upTo: '10', unitPrice: '1' }, { upTo: null, unitPrice: '0.5' }] }],
    };
    const combinations = [
      { values: { model: 'small', direction: 'input' }, value: '5' },
      { values: { model: 'small', direction: 'output' }, value: '-5' },
      { values: { model: 'large', direction: 'input' }, value: '-50' },
      { values: { model: 'large', direction: 'output' }, value: '30' },
    ];
    const rated = rateDimensionalUsage({ currency: 'USD', items: [item] }, window, { groupBy: ['model', 'direction'], aggregation: 'sum', combinations }, noLedger);
    // The large model's -20 rates as no usage on its tiers; the other usage adds up to 0 units at 0.5.
    expect(rated.map((one) => [one.line.title, one.line.quantity, amountOf(one.line).toFixed(2)])).toEqual([
      ['Tokens — model large, direction input', '-50', '0.00'],
      ['Tokens — model large, direction output', '30', '0.00'],
      ['Tokens — other usage, direction input', '5', '0.00'],
      ['Tokens — other usage, direction output', '-5', '0.00'],
    ]);
    expect(rated.flatMap((one) => one.charges).map((charge) => [charge.dimensionsKey, charge.quantity, charge.amount])).toEqual([
      ['{"model":"large"}', '-20', '0.00'],
      ['{}', '0', '0.00'],
    ]);
    // Below zero on the item's own per-unit price: the units are given back, shared in proportion.
    const credit = rateDimensionalUsage({ currency: 'USD', items: [item] }, window, { groupBy: ['model', 'direction'], aggregation: 'sum', combinations: [combinations[0]!, { ...combinations[1]!, value: '-8' }] }, noLedger);
    expect(credit.map((one) => [one.line.quantity, amountOf(one.line).toFixed(2)])).toEqual([
      ['5', '2.50'],
      ['-8', '-4.00'],
    ]);
    expect(credit.flatMap((one) => one.charges).map((charge) => [charge.quantity, charge.amount])).toEqual([['-3', '-1.50']]);
  });

  it('when a max meter is rated, then an entry takes the greatest of its combinations', () => {
    const item: RatedItem = { id: 'tok', name: 'Peak', meterId: 'mtr', effectiveFrom: null, effectiveTo: null, pricingModel: 'per_unit', unitPrice: '1', dimensionalPrices: [{ match: { model: 'a' }, pricingModel: 'per_unit', unitPrice: '10' }] };
    const combinations = [
      { values: { model: 'a', region: 'eu' }, value: '7' },
      { values: { model: 'a', region: 'us' }, value: '4' },
      { values: { model: 'b', region: 'eu' }, value: '3' },
      { values: { model: 'c', region: null }, value: null },
    ];
    const rated = rateDimensionalUsage({ currency: 'USD', items: [item] }, window, { groupBy: ['model', 'region'], aggregation: 'max', combinations }, noLedger);
    expect(rated.map((one) => [one.line.title, one.line.quantity, one.line.price, one.line.dimensions])).toEqual([
      ['Peak — model a', '7', '10', { model: 'a' }],
      ['Peak — other usage', '3', '1', {}],
    ]);
  });
});
