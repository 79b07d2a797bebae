import { validateAttributes, type AttributeDefinition } from '../../src/domain/attributes';

const definitions: AttributeDefinition[] = [
  { key: 'color', type: 'enum', required: true, allowedValues: ['red', 'blue'] },
  { key: 'weight', type: 'number', required: false },
  { key: 'launch', type: 'date', required: false },
  { key: 'digital', type: 'boolean', required: false },
  { key: 'note', type: 'string', required: false },
];

describe('validateAttributes', () => {
  it('when every value fits its definition, then there is no problem', () => {
    expect(validateAttributes(definitions, { color: 'red', weight: 1.5, launch: '2026-11-01', digital: true, note: 'x' })).toEqual([]);
  });

  it('when values are wrong in every way, then each problem is named by its path', () => {
    expect(validateAttributes(definitions, { color: 'green', weight: '1', launch: '1 Nov', digital: 'yes', size: 'XL' })).toEqual([
      { path: 'attributes.color', message: 'must be one of red, blue' },
      { path: 'attributes.weight', message: 'must be a number' },
      { path: 'attributes.launch', message: 'must be a date, YYYY-MM-DD' },
      { path: 'attributes.digital', message: 'must be true or false' },
      { path: 'attributes.size', message: 'is not a defined attribute' },
    ]);
  });

  it('when a required attribute is missing or null, then it is reported', () => {
    expect(validateAttributes(definitions, {}, 'body.attributes')).toEqual([{ path: 'body.attributes.color', message: 'is required' }]);
    expect(validateAttributes(definitions, { color: null })).toEqual([{ path: 'attributes.color', message: 'is required' }]);
  });
});

describe('validateAttributes at the edges', () => {
  const launch: AttributeDefinition = { key: 'launch', type: 'date', required: false };

  it('when a date names a day the calendar lacks, or the year 0, then it is refused', () => {
    for (const day of ['2026-02-30', '2026-04-31', '2025-02-29', '0000-01-01']) {
      expect(validateAttributes([launch], { launch: day })).toEqual([{ path: 'attributes.launch', message: 'must be a date, YYYY-MM-DD' }]);
    }
    expect(validateAttributes([launch], { launch: '2024-02-29' })).toEqual([]);
  });

  it('when a required key is a name every object inherits, then its absence is still found', () => {
    const inherited: AttributeDefinition = { key: 'constructor', type: 'string', required: true };
    expect(validateAttributes([inherited], {})).toEqual([{ path: 'attributes.constructor', message: 'is required' }]);
  });
});
