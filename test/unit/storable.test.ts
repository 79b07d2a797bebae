import fc from 'fast-check';
import { Decimal } from 'decimal.js';
import { instantProblem, jsonProblem, printableKey, storableJsonProblem, numericProblem, textProblem } from '../../src/domain/storable';
import { parseUsageEvent } from '../../src/modules/usage/usage.schemas';
import { UNSAFE_NUMBER } from '../../src/http/schemas';

const valid = { CustomerEntityId: 'ent_1', metric: 'api_calls', value: 3, timestamp: '2026-11-01T10:00:00Z' };
const errorOf = (raw: object) => {
  const result = parseUsageEvent(raw);
  return result.ok ? undefined : result.error;
};

describe('numericProblem: NUMERIC(30, 10)', () => {
  it('when a value has 20 integer digits and 10 decimals, then it fits; one more of either does not', () => {
    expect(numericProblem('99999999999999999999.9999999999', 30, 10)).toBeUndefined();
    expect(numericProblem('-99999999999999999999.9999999999', 30, 10)).toBeUndefined();
    expect(numericProblem('100000000000000000000', 30, 10)).toBe('must have at most 20 digits before the decimal point');
    expect(numericProblem('0.00000000001', 30, 10)).toBe('must have at most 10 decimal places');
    expect(numericProblem(1e25, 30, 10)).toBe('must have at most 20 digits before the decimal point');
    expect(numericProblem(1e-11, 30, 10)).toBe('must have at most 10 decimal places');
    expect(numericProblem('1e308', 30, 10)).toBeDefined();
    expect(numericProblem('abc', 30, 10)).toBe('must be a number');
  });

  it('for any decimal, it fits exactly when its integer digits and decimal places are within the bounds', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }), fc.integer({ min: 0, max: 14 }), (unscaled, places) => {
        const value = new Decimal(unscaled.toString()).dividedBy(new Decimal(10).pow(places));
        const integerDigits = value.abs().trunc().isZero() ? 0 : value.abs().trunc().toFixed().length;
        const fits = value.decimalPlaces() <= 10 && integerDigits <= 20;
        expect(numericProblem(value.toFixed(), 30, 10) === undefined).toBe(fits);
      }),
    );
  });
});

describe('textProblem and jsonProblem', () => {
  it('when text holds a NUL or a lone surrogate, then it is refused; paired surrogates (emoji) are fine', () => {
    expect(textProblem('api\u0000calls')).toBe('must not contain a NUL character');
    expect(textProblem('bad \uD800 half')).toMatch(/unpaired surrogate/);
    expect(textProblem('bad \uDC00 half')).toMatch(/unpaired surrogate/);
    expect(textProblem('rocket \uD83D\uDE80 fine')).toBeUndefined();
  });

  it('when a NUL hides in a nested key or string of JSON, then it is found', () => {
    expect(jsonProblem({ region: 'eu', tags: ['a', { deep: 'x\u0000' }] })).toBe('must not contain a NUL character');
    expect(jsonProblem({ ['k\u0000']: 1 })).toBe('has a key that must not contain a NUL character');
    expect(storableJsonProblem({ events: [{ metric: 'ok' }, { metric: 'a\u0000' }] })).toEqual({ path: ['events', '1', 'metric'], problem: 'must not contain a NUL character' });
    expect(jsonProblem({ region: 'eu', count: 3, ok: true, none: null })).toBeUndefined();
  });

  it('when a key holds what Postgres cannot store, then the path names it with escapes, so that the path itself can be stored', () => {
    const found = storableJsonProblem({ metadata: { ['a\u0000b']: 1 } });
    expect(found).toEqual({ path: ['metadata', 'a\\u0000b'], problem: 'has a key that must not contain a NUL character' });
    expect(storableJsonProblem({ tags: { ['half \uD800 key']: 1 } })?.path).toEqual(['tags', 'half \\ud800 key']);
    expect(storableJsonProblem({ ['\uDC00']: 1 })?.path).toEqual(['\\udc00']);
    for (const key of [found!.path.join('.'), 'half \\ud800 key']) expect(textProblem(key)).toBeUndefined();
    expect(printableKey('rocket \uD83D\uDE80 fine')).toBe('rocket \uD83D\uDE80 fine');
  });

  it('when arrays nest directly in arrays more than 8 deep, then the outermost too deep is named; an object between them starts the count again', () => {
    const nested = (depth: number, inner: unknown = 1): unknown => (depth === 0 ? inner : [nested(depth - 1, inner)]);
    expect(storableJsonProblem({ shape: nested(8) })).toBeUndefined();
    expect(storableJsonProblem({ shape: nested(9) })).toEqual({ path: ['shape', '0', '0', '0', '0', '0', '0', '0', '0'], problem: 'must not nest arrays directly in arrays more than 8 deep' });
    expect(storableJsonProblem(nested(5, { again: nested(8) }))).toBeUndefined();
    expect(jsonProblem(nested(5, { again: nested(9) }))).toBe('must not nest arrays directly in arrays more than 8 deep');
  });
});

describe('instantProblem', () => {
  it('when an instant falls outside the years 1 to 9999 in UTC, then it is refused', () => {
    expect(instantProblem(new Date('9999-12-31T23:59:59Z'))).toBeUndefined();
    expect(instantProblem(new Date('9999-12-31T23:59:59-14:00'))).toBe('must fall in the years 1 to 9999 (UTC)');
    expect(instantProblem(new Date('0000-12-31T23:59:59Z'))).toBeDefined();
  });
});

describe('usage events refuse what the event table cannot hold, each with its reason', () => {
  it.each([
    [{ value: 1e25 }, 'value must have at most 20 digits before the decimal point'],
    [{ value: 1e21 }, 'value must have at most 20 digits before the decimal point'],
    [{ value: 1e308 }, 'value must have at most 20 digits before the decimal point'],
    [{ value: '123456789012345678901' }, 'value must be a decimal number with at most 20 digits before the point and 10 after it'],
    [{ value: 1e-11 }, 'value must have at most 10 decimal places'],
    [{ value: JSON.parse('9007199254740993') as number }, `value ${UNSAFE_NUMBER}`],
    [{ value: '0.123456789012345678901234567890' }, 'value must be a decimal number with at most 20 digits before the point and 10 after it'],
    [{ timestamp: '9999-12-31T23:59:59-14:00' }, 'timestamp must fall in the years 1 to 9999 (UTC)'],
    [{ metric: 'api\u0000calls' }, 'metric must not contain a NUL character'],
    [{ CustomerEntityId: 'ent_\uD800' }, 'CustomerEntityId must be valid Unicode (an unpaired surrogate was found)'],
    [{ metadata: { note: 'x\u0000' } }, 'metadata.note must not contain a NUL character'],
  ])('%j → %s', (change, error) => {
    expect(errorOf({ ...valid, ...change })).toBe(error);
  });

  it('when a value fits the column exactly, then it is kept as given', () => {
    const result = parseUsageEvent({ ...valid, value: '99999999999999999999.9999999999' });
    expect(result.ok && result.event.value).toBe('99999999999999999999.9999999999');
  });
});
