import fc from 'fast-check';
import { AppError } from '../../src/domain/errors';
import { planItemInput } from '../../src/modules/billing-plans/billing-plans.schemas';
import { checkQueryFilters, checkSpan, filtersSchema, groupBySchema, groupsOf, listOf, meterQueryParams } from '../../src/modules/meters/meter-dimensions';

const problemOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return (error as AppError).items?.[0]?.path;
  }
  throw new Error('expected a refusal');
};

describe('meter groupBy', () => {
  it('when keys are plain or dotted, then they are taken', () => {
    expect(groupBySchema.parse(['model', 'request.region', 'a_b-c'])).toEqual(['model', 'request.region', 'a_b-c']);
  });

  it.each([[['']], [['a..b']], [['.a']], [['a b']], [['a', 'a']], [['customer']], [['x'.repeat(101)]], [['a', 'b', 'c', 'd', 'e', 'f']], [["a'; drop"]]])('when the keys are %j, then they are refused', (keys) => {
    expect(groupBySchema.safeParse(keys).success).toBe(false);
  });
});

describe('meter filters', () => {
  it('when in and not_in list values and exists takes none, then they are taken', () => {
    const filters = [
      { key: 'direction', operator: 'in', values: ['input', 'output'] },
      { key: 'a.b', operator: 'not_in', values: ['x'] },
      { key: 'c', operator: 'exists' },
      { key: 'd', operator: 'not_exists' },
    ];
    expect(filtersSchema.parse(filters)).toEqual(filters);
  });

  it('when a value has spaces around it, or is only spaces, then it is kept as written, as the events keep theirs', () => {
    const filters = [{ key: 'm', operator: 'in', values: [' 1', '1', 'small ', ' '] }];
    expect(filtersSchema.parse(filters)).toEqual(filters);
    const item = { name: 'Tokens', meterId: 'mtr_1', dimensionalPrices: [{ match: { m: ' 1' }, pricingModel: 'per_unit', unitPrice: '4' }, { match: { m: '1' }, pricingModel: 'per_unit', unitPrice: '1' }] };
    expect(planItemInput.parse(item).dimensionalPrices!.map((entry) => entry.match)).toEqual([{ m: ' 1' }, { m: '1' }]);
  });

  it.each([
    [{ key: 'a', operator: 'in', values: [] }],
    [{ key: 'a', operator: 'in' }],
    [{ key: 'a', operator: 'not_in', values: [''] }],
    [{ key: 'a', operator: 'equals', values: ['x'] }],
    [{ key: 'a b', operator: 'exists' }],
  ])('when the filter is %j, then it is refused', (filter) => {
    expect(filtersSchema.safeParse([filter]).success).toBe(false);
  });
});

describe('usage query parameters', () => {
  it('when groupBy is repeated or comma-separated, then both give one list', () => {
    expect(listOf(['model', 'direction'])).toEqual(['model', 'direction']);
    expect(listOf('model, direction')).toEqual(['model', 'direction']);
    expect(groupsOf(['model', 'customer'], ['model'])).toEqual(['model', 'customer']);
  });

  it('when groupBy names no dimension of the meter or repeats one, then it is refused by its parameter', () => {
    expect(problemOf(() => groupsOf('region', ['model']))).toBe('query.groupBy');
    expect(problemOf(() => groupsOf('model,model', ['model']))).toBe('query.groupBy');
  });

  it('when filter.<dimension> and filter[<dimension>] are given, then each is a list of values', () => {
    expect(meterQueryParams({ 'filter.model': 'a,b', 'filter[direction]': ['input', 'output'], from: 'x' })).toEqual({ model: ['a', 'b'], direction: ['input', 'output'] });
    expect(problemOf(() => meterQueryParams({ 'filter.model': '' }))).toBe('query.filter.model');
    expect(problemOf(() => checkQueryFilters({ region: ['eu'] }, ['model']))).toBe('query.filter.region');
    expect(problemOf(() => checkQueryFilters({ model: ['x'.repeat(256)] }, ['model']))).toBe('query.filter.model');
  });

  it('when a filter value is in double quotes, then it is taken as written, commas, spaces and doubled quotes included', () => {
    expect(meterQueryParams({ 'filter.customer_name': '"Acme, Inc", eu ,"" ," x "' })).toEqual({ customer_name: ['Acme, Inc', 'eu', '', ' x '] });
    expect(meterQueryParams({ 'filter[a.b]': ['"{""b"": 1, ""aa"": [1, 2]}"', 'plain'] })).toEqual({ 'a.b': ['{"b": 1, "aa": [1, 2]}', 'plain'] });
    expect(meterQueryParams({ 'filter.model': 'a,,b,' })).toEqual({ model: ['a', 'b'] });
    expect(problemOf(() => meterQueryParams({ 'filter.model': '"Acme, Inc' }))).toBe('query.filter.model');
    expect(problemOf(() => meterQueryParams({ 'filter.model': '"Acme" Inc,b' }))).toBe('query.filter.model');
  });

  it('when any list of values is written with each value quoted, then it reads back as the same list', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 12 }), { minLength: 1, maxLength: 6 }), (values) => {
        const written = values.map((value) => `"${value.replaceAll('"', '""')}"`).join(',');
        expect(meterQueryParams({ 'filter.model': written })).toEqual({ model: values });
      }),
    );
  });

  it('when the span exceeds what the window size allows, then it is refused by to', () => {
    expect(() => checkSpan('2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z', 'hour')).not.toThrow();
    expect(problemOf(() => checkSpan('2026-01-01T00:00:00Z', '2026-02-01T00:00:01Z', 'hour'))).toBe('query.to');
    expect(problemOf(() => checkSpan('2026-01-01T00:00:00Z', '2027-01-03T00:00:00Z', 'day'))).toBe('query.to');
    expect(() => checkSpan('2020-01-01T00:00:00Z', '2029-12-31T00:00:00Z', 'month')).not.toThrow();
  });
});
