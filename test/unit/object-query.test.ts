import { compileFilter, compileSort, type FieldSpec } from '../../src/domain/object-query';

const fields: Record<string, FieldSpec> = {
  name: { column: 'name', type: 'string' },
  total: { column: 'total', type: 'decimal' },
  paid: { column: 'paid', type: 'boolean' },
  createdAt: { column: 'created_at', type: 'datetime' },
};

describe('object query language', () => {
  it('when filters name known fields with fitting operators and values, then they compile to columns', () => {
    const { conditions, problems } = compileFilter(fields, [
      { field: 'name', op: 'contains', value: 'acme' },
      { field: 'total', op: 'gte', value: '10.5' },
      { field: 'createdAt', op: 'lt', value: '2026-11-01T00:00:00Z' },
      { field: 'paid', op: 'isNull', value: false },
      { field: 'name', op: 'in', value: ['a', 'b'] },
    ]);
    expect(problems).toEqual([]);
    expect(conditions.map((c) => [c.column, c.op])).toEqual([
      ['name', 'contains'],
      ['total', 'gte'],
      ['created_at', 'lt'],
      ['paid', 'isNull'],
      ['name', 'in'],
    ]);
  });

  it('when a filter names an unknown field, operator or a wrong value, then each problem has its path', () => {
    const { problems } = compileFilter(fields, [
      { field: 'password', op: 'eq', value: 'x' },
      { field: 'name', op: 'like', value: '%' },
      { field: 'total', op: 'eq', value: 'ten' },
      { field: 'paid', op: 'gt', value: true },
      { field: 'name', op: 'in', value: [] },
      { field: 'total', op: 'contains', value: '1' },
    ]);
    expect(problems.map((p) => p.path)).toEqual([
      'body.filter.0.field',
      'body.filter.1.op',
      'body.filter.2.value',
      'body.filter.3.op',
      'body.filter.4.value',
      'body.filter.5.op',
    ]);
  });

  it('when a date or a number does not fit its column, then it is refused by its path before any SQL', () => {
    const dated: Record<string, FieldSpec> = { ...fields, date: { column: 'date', type: 'date' } };
    const refused = [
      { field: 'date', op: 'gte', value: '2026-02-30' },
      { field: 'date', op: 'eq', value: '0000-01-01' },
      { field: 'date', op: 'eq', value: '2026-11-01T00:00:00Z' },
      { field: 'createdAt', op: 'lt', value: '2026-02-29T10:00:00Z' },
      { field: 'createdAt', op: 'lt', value: '+275760-09-13T00:00:00Z' },
      { field: 'createdAt', op: 'lt', value: 'Dec 5 2026' },
      { field: 'createdAt', op: 'lt', value: '2026-11-01T10:00:00' },
      { field: 'createdAt', op: 'lt', value: '0001-01-01T00:00:00+02:00' },
      { field: 'total', op: 'gt', value: '9'.repeat(101) },
      { field: 'date', op: 'in', value: ['2026-11-01', '2026-11-31'] },
    ];
    expect(compileFilter(dated, refused).problems.map((p) => p.path)).toEqual(refused.map((_, i) => `body.filter.${i}.value`));
    const taken = [
      { field: 'date', op: 'gte', value: '2024-02-29' },
      { field: 'createdAt', op: 'lt', value: '2026-11-01' },
      { field: 'createdAt', op: 'lt', value: '2026-11-01T10:00:00.123+05:30' },
      { field: 'createdAt', op: 'gte', value: '0001-01-01T00:00:00Z' },
      { field: 'total', op: 'gt', value: '9'.repeat(100) },
    ];
    expect(compileFilter(dated, taken).problems).toEqual([]);
  });

  it('when a filter or a sort names a property every object inherits, then it is an unknown field, never a column', () => {
    const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];
    expect(compileFilter(fields, names.map((field) => ({ field, op: 'eq', value: 'x' }))).problems.map((p) => p.path)).toEqual(names.map((_, i) => `body.filter.${i}.field`));
    expect(compileSort(fields, names.map((field) => ({ field }))).problems.map((p) => p.path)).toEqual(names.map((_, i) => `body.sort.${i}.field`));
  });

  it('when a value carries SQL, then it stays a value (only whitelisted columns ever reach the query)', () => {
    const { conditions } = compileFilter(fields, [{ field: 'name', op: 'eq', value: "x'; DROP TABLE customers; --" }]);
    expect(conditions).toEqual([{ column: 'name', op: 'eq', value: "x'; DROP TABLE customers; --" }]);
  });

  it('when a sort names fields, then known ones compile and unknown ones are refused', () => {
    expect(compileSort(fields, [{ field: 'total', direction: 'desc' }, { field: 'nope' }])).toEqual({
      order: [{ column: 'total', order: 'desc' }],
      problems: [{ path: 'body.sort.1.field', message: 'unknown field' }],
    });
  });
});
