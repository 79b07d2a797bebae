import fc from 'fast-check';
import { z } from 'zod';
import { currencyMinorUnits } from '../../src/domain/currencies';
import { formatAmount, formatExact, formatExactOrNull, toDecimal } from '../../src/domain/money';
import { dayIn, startOfDayIn } from '../../src/domain/zoned-days';
import { acceptingFormerNames, sendingFormerNames, withFormerNames } from '../../src/http/former-names';

/** A decimal as Postgres sends a NUMERIC(p, s): `s` digits after the point, zeros included. */
const stored = fc
  .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 20n }), fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 10 }))
  .map(([negative, digits, scale, padding]) => {
    const text = digits.toString().padStart(scale + 1, '0');
    const value = scale === 0 ? text : `${text.slice(0, -scale)}.${text.slice(-scale)}`;
    return { text: `${negative && digits > 0n ? '-' : ''}${value}${scale === 0 ? '' : '0'.repeat(padding)}`, digits, scale };
  });

describe('formatExact: unit prices, quantities, usage values', () => {
  it('when a stored decimal is shown, then it keeps its value to the last digit, without exponent or trailing zero', () => {
    fc.assert(
      fc.property(stored, ({ text }) => {
        const shown = formatExact(text);
        expect(toDecimal(shown).equals(toDecimal(text))).toBe(true);
        expect(shown).toMatch(/^-?(0|[1-9]\d*)(\.\d*[1-9])?$/);
      }),
    );
  });

  it('when the reported values are shown, then they read as integrators expect', () => {
    expect(formatExact('105079.0000000000')).toBe('105079');
    expect(formatExact('1.50')).toBe('1.5');
    expect(formatExact('99')).toBe('99');
    expect(formatExact('0.0000000010')).toBe('0.000000001');
    expect(formatExact('-0.000')).toBe('0');
    expect(formatExact('123456789012345678901234567890.1234567890')).toBe('123456789012345678901234567890.123456789');
    expect(formatExactOrNull(null)).toBeNull();
  });
});

describe('formatAmount: money', () => {
  const currencies = fc.constantFrom('JPY', 'USD', 'EUR', 'KWD', 'BHD', 'CLF');

  it('when an amount is shown, then it has exactly the currency’s minor unit digits and differs from the value by at most half a unit', () => {
    fc.assert(
      fc.property(stored, currencies, ({ text }, currency) => {
        const shown = formatAmount(text, currency);
        const minor = currencyMinorUnits(currency);
        expect(shown).toMatch(minor === 0 ? /^-?\d+$/ : new RegExp(`^-?\\d+\\.\\d{${minor}}$`));
        expect(toDecimal(shown).minus(toDecimal(text)).abs().lessThanOrEqualTo(toDecimal(10).pow(-minor).dividedBy(2))).toBe(true);
        expect(shown.startsWith('-') && toDecimal(shown).isZero()).toBe(false);
      }),
    );
  });

  it('when an amount already in minor units is shown, then nothing is lost', () => {
    expect(formatAmount('150.0000', 'JPY')).toBe('150');
    expect(formatAmount('1.5000', 'USD')).toBe('1.50');
    expect(formatAmount('1.5', 'KWD')).toBe('1.500');
  });
});

describe('former names', () => {
  const query = acceptingFormerNames(z.object({ from: z.string().optional(), to: z.string().optional(), limit: z.number() }), { dateFrom: 'from', dateTo: 'to' });

  it('when a request gives a former name, then the handler sees the current one only', () => {
    expect(query.parse({ dateFrom: 'a', limit: 1 })).toEqual({ from: 'a', limit: 1 });
    expect(query.parse({ from: 'a', dateFrom: 'a', dateTo: 'b', limit: 1 })).toEqual({ from: 'a', to: 'b', limit: 1 });
  });

  it('when a request gives both names with different values, then it is refused at the former name', () => {
    const result = query.safeParse({ from: 'a', dateFrom: 'b', limit: 1 });
    expect(result.success).toBe(false);
    expect(result.error!.issues).toEqual([expect.objectContaining({ path: ['dateFrom'] })]);
  });

  it('when the schemas are documented, then the former names are declared properties marked deprecated', () => {
    const input = z.toJSONSchema(query, { io: 'input' }) as { properties: Record<string, { deprecated?: boolean }> };
    expect(input.properties.dateFrom!.deprecated).toBe(true);
    expect(input.properties.from!.deprecated).toBeUndefined();
    const output = z.toJSONSchema(withFormerNames(z.object({ asOfDate: z.string() }), { asOf: 'asOfDate' })) as { properties: Record<string, { deprecated?: boolean }>; required: string[] };
    expect(output.properties.asOf!.deprecated).toBe(true);
    expect(sendingFormerNames({ asOfDate: '2026-11-26' }, { asOf: 'asOfDate' })).toEqual({ asOfDate: '2026-11-26', asOf: '2026-11-26' });
  });
});

describe('zoned days', () => {
  it('when an instant is read in a zone, then its day starts at or before it and the next day starts after it', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('1990-01-01T00:00:00Z'), max: new Date('2090-01-01T00:00:00Z'), noInvalidDate: true }), fc.constantFrom('UTC', 'Europe/Berlin', 'Pacific/Kiritimati', 'Pacific/Pago_Pago', 'America/St_Johns', 'Asia/Kathmandu'), (instant, zone) => {
        const day = dayIn(zone, instant);
        expect(startOfDayIn(day, zone).getTime()).toBeLessThanOrEqual(instant.getTime());
        const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
        expect(startOfDayIn(next, zone).getTime()).toBeGreaterThan(instant.getTime());
      }),
    );
  });
});
