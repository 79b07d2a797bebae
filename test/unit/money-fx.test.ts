import fc from 'fast-check';
import { currencyMinorUnits, isCurrency, listCurrencies } from '../../src/domain/currencies';
import { DomainError } from '../../src/domain/errors';
import { convert, invertRate } from '../../src/domain/fx';
import { Decimal, formatAmount, fromMinorUnits, hasAtMostMinorUnits, roundToMinor, toDecimal, toMinorUnits } from '../../src/domain/money';

describe('currencies', () => {
  it('when a currency is looked up, then its ISO 4217 minor units come back', () => {
    expect([currencyMinorUnits('USD'), currencyMinorUnits('JPY'), currencyMinorUnits('KWD'), currencyMinorUnits('CLF')]).toEqual([2, 0, 3, 4]);
    expect(listCurrencies().length).toBeGreaterThan(150);
    expect(isCurrency('EUR')).toBe(true);
    expect(isCurrency('EURO')).toBe(false);
  });

  it('when a currency is unknown, then a DomainError', () => {
    expect(() => currencyMinorUnits('ZZZ')).toThrow(DomainError);
  });
});

describe('money', () => {
  it('when amounts are rounded, then half goes away from zero at the minor unit', () => {
    expect(formatAmount('2.675', 'USD')).toBe('2.68');
    expect(formatAmount('-2.675', 'USD')).toBe('-2.68');
    expect(formatAmount('1049.5', 'JPY')).toBe('1050');
    expect(formatAmount('10.5', 'USD')).toBe('10.50');
    expect(formatAmount('0.0005', 'KWD')).toBe('0.001');
  });

  it('when 0.1 + 0.2 is summed, then it is exactly 0.3', () => {
    expect(toDecimal(0.1).plus(toDecimal('0.2')).toFixed()).toBe('0.3');
  });

  it('when input is not a number, then a DomainError', () => {
    for (const bad of ['abc', '', 'NaN', Number.NaN, Number.POSITIVE_INFINITY, '1,5']) expect(() => toDecimal(bad)).toThrow(DomainError);
  });

  it('when an amount has more decimals than its currency, then it is flagged', () => {
    expect(hasAtMostMinorUnits('10.5', 'JPY')).toBe(false);
    expect(hasAtMostMinorUnits('10.125', 'KWD')).toBe(true);
  });
});

describe('fx conversion', () => {
  const amount = fc.integer({ min: -10_000_000, max: 10_000_000 }).map((cents) => new Decimal(cents).dividedBy(100));
  const rate = fc.integer({ min: 1, max: 10_000_000 }).map((n) => new Decimal(n).dividedBy(100_000));
  const currency = fc.constantFrom('USD', 'JPY', 'KWD', 'EUR');

  it('when the rate is 1, then conversion only rounds', () => {
    fc.assert(fc.property(amount, currency, (a, c) => {
      expect(convert(a, 1, c).equals(roundToMinor(a, c))).toBe(true);
    }));
  });

  it('when converting, then the rounding error is at most half a minor unit', () => {
    fc.assert(fc.property(amount, rate, currency, (a, r, c) => {
      const exact = a.times(r);
      const error = convert(a, r, c).minus(exact).abs();
      expect(error.lte(new Decimal(10).pow(-currencyMinorUnits(c)).dividedBy(2))).toBe(true);
    }));
  });

  it('when the amount grows, then the converted amount never falls', () => {
    fc.assert(fc.property(amount, amount, rate, currency, (a, b, r, c) => {
      const [low, high] = a.lte(b) ? [a, b] : [b, a];
      expect(convert(low, r, c).lte(convert(high, r, c))).toBe(true);
    }));
  });

  it('when a rate is inverted, then rate × inverse is 1 to 11 significant digits', () => {
    fc.assert(fc.property(rate, (r) => {
      expect(r.times(invertRate(r)).toSignificantDigits(11).toFixed()).toBe('1');
    }));
  });

  it('when the rate is zero or negative, then a DomainError', () => {
    expect(() => convert(10, 0, 'USD')).toThrow(DomainError);
    expect(() => invertRate(-1)).toThrow(DomainError);
  });
});

describe('minor units, as payment gateways count amounts', () => {
  it('when an amount with the currency\'s digits goes to minor units and back, then it is the same amount, and the units are a whole number', () => {
    const codes = listCurrencies().map((currency) => currency.code);
    fc.assert(
      fc.property(fc.constantFrom(...codes), fc.integer({ min: 0, max: 10 ** 12 }), (currency, minor) => {
        const amount = fromMinorUnits(minor, currency);
        expect(hasAtMostMinorUnits(amount, currency)).toBe(true);
        expect(toMinorUnits(amount, currency)).toBe(minor);
      }),
    );
    expect([toMinorUnits('119.50', 'USD'), toMinorUnits('500', 'JPY'), toMinorUnits('1.234', 'KWD')]).toEqual([11950, 500, 1234]);
    expect([fromMinorUnits(11950, 'USD'), fromMinorUnits(500, 'JPY'), fromMinorUnits(1234, 'KWD')]).toEqual(['119.50', '500', '1.234']);
  });
});
