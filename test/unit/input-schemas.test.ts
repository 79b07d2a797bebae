import { z } from 'zod';
import { createInvoiceBody, invoiceItemInput } from '../../src/modules/invoices/invoices.schemas';
import { createContractBody } from '../../src/modules/contracts/contracts.schemas';
import { usageListQuery } from '../../src/modules/usage/usage.schemas';
import { decimal, emailAddress, UNSAFE_NUMBER, isoCurrency, isoDate, isoDateTime, text } from '../../src/http/schemas';

const issues = (schema: z.ZodType, value: unknown) => {
  const result = schema.safeParse(value);
  return result.success ? [] : result.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
};

describe('decimal(NUMERIC(24,6))', () => {
  const column = decimal({ precision: 24, scale: 6 });

  it.each([
    [1.5, '1.5'],
    ['0.920000', '0.92'],
    ['-000123.45', '-123.45'],
    ['999999999999999999.999999', '999999999999999999.999999'],
    [0.000001, '0.000001'],
    ['1.5000000000', '1.5'],
    [9007199254740991, '9007199254740991'],
    ['9007199254740993', '9007199254740993'],
  ])('when given %p, then it is kept exactly as %p', (input, output) => {
    expect(column.parse(input)).toBe(output);
  });

  it.each([
    ['1.1234567', 'must be a decimal number with at most 18 digits before the point and 6 after it'],
    [0.0000001, 'must have at most 6 decimal places'],
    ['1000000000000000000', 'must be a decimal number with at most 18 digits before the point and 6 after it'],
    // Past 2^53 a JSON number has lost digits before the check sees it (…993 parses as …992): text only.
    [JSON.parse('9007199254740993') as number, UNSAFE_NUMBER],
    [JSON.parse('-9007199254740993') as number, UNSAFE_NUMBER],
    [1e18, 'must have at most 18 digits before the decimal point'],
    [1e17, UNSAFE_NUMBER],
    ['1e3', 'must be a decimal number with at most 18 digits before the point and 6 after it'],
    ['', 'must be a decimal number with at most 18 digits before the point and 6 after it'],
    [true, 'must be a decimal number with at most 18 digits before the point and 6 after it'],
    [null, 'must be a decimal number with at most 18 digits before the point and 6 after it'],
    [[1], 'must be a decimal number with at most 18 digits before the point and 6 after it'],
  ])('when given %p, then it is refused: %s', (input, message) => {
    expect(issues(column, input)).toEqual([{ path: '', message }]);
  });

  it('when the sign or a power-of-ten maximum is set, then the bounds hold for numbers and strings alike', () => {
    const positive = decimal({ precision: 24, scale: 4, sign: 'positive' });
    expect(issues(positive, 0)).toEqual([{ path: '', message: 'must be greater than 0' }]);
    expect(issues(positive, '0.0000')).not.toEqual([]);
    expect(positive.parse('0.0001')).toBe('0.0001');
    const percentage = decimal({ precision: 9, scale: 6, sign: 'nonNegative', max: 100 });
    expect(percentage.parse('100.000')).toBe('100');
    expect(percentage.parse(0)).toBe('0');
    expect(issues(percentage, 100.000001)).toEqual([{ path: '', message: 'must be at most 100' }]);
    expect(issues(percentage, '100.5')).not.toEqual([]);
    expect(issues(percentage, -1)).toEqual([{ path: '', message: 'must not be negative' }]);
    // Text of the right form but the wrong sign is told its sign, as a number is.
    expect(issues(positive, '-10')).toEqual([{ path: '', message: 'must be greater than 0' }]);
    expect(issues(positive, '0')).toEqual([{ path: '', message: 'must be greater than 0' }]);
    expect(issues(percentage, '-0.5')).toEqual([{ path: '', message: 'must not be negative' }]);
    expect(issues(positive, '-1e3')).toEqual([{ path: '', message: 'must be a decimal number with at most 20 digits before the point and 4 after it' }]);
  });

  it('when the document describes it, then the string pattern and the number bounds say what the check accepts', () => {
    const json = z.toJSONSchema(decimal({ precision: 24, scale: 4, sign: 'positive' }), { io: 'input' }) as { anyOf: Array<Record<string, unknown>> };
    const [number, string] = json.anyOf;
    expect(number).toEqual({ type: 'number', exclusiveMinimum: 0, maximum: Number.MAX_SAFE_INTEGER, multipleOf: 0.0001 });
    const narrow = z.toJSONSchema(decimal({ precision: 9, scale: 2 }), { io: 'input' }) as { anyOf: Array<Record<string, unknown>> };
    expect(narrow.anyOf[0]).toEqual({ type: 'number', exclusiveMinimum: -1e7, exclusiveMaximum: 1e7, multipleOf: 0.01 });
    const wide = z.toJSONSchema(decimal({ precision: 30, scale: 10 }), { io: 'input' }) as { anyOf: Array<Record<string, unknown>> };
    expect(wide.anyOf[0]).toEqual({ type: 'number', minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER, multipleOf: 1e-10 });
    const pattern = new RegExp(string!.pattern as string);
    for (const accepted of ['1', '0.0001', '+0012.5000', '99999999999999999999.9999']) expect([accepted, pattern.test(accepted)]).toEqual([accepted, true]);
    for (const refused of ['0', '0.00001', '-1', '100000000000000000000', '1.', '.']) expect([refused, pattern.test(refused)]).toEqual([refused, false]);
  });
});

describe('invoice items: quantity × price must fit invoice_items.amount, NUMERIC(24,4)', () => {
  const item = { title: 'Line', quantity: '1', price: '1' };

  it('when quantity and price are both 1e17, then both are refused', () => {
    expect(issues(invoiceItemInput, { ...item, quantity: 1e17, price: 1e17 }).map((issue) => issue.path)).toEqual(['quantity', 'price']);
  });

  it('when both are at their largest, then the product still has at most 20 integer digits', () => {
    const parsed = invoiceItemInput.parse({ ...item, quantity: '999999999999.999999', price: '-99999999.999999' });
    expect(BigInt(parsed.quantity.split('.')[0]!) * BigInt(parsed.price.split('.')[0]!.replace('-', ''))).toBeLessThan(10n ** 20n);
    expect(issues(invoiceItemInput, { ...item, quantity: '1000000000000' })).toEqual([{ path: 'quantity', message: expect.stringContaining('12 digits') }]);
    expect(issues(invoiceItemInput, { ...item, price: '100000000' })).toEqual([{ path: 'price', message: expect.stringContaining('8 digits') }]);
  });
});

describe('dates', () => {
  it.each(['2026-02-30', '0000-01-01', '2026-13-01', '2025-02-29', '10000-01-01', '2026-1-01'])('when the date is %s, then it is refused', (date) => {
    expect(issues(isoDate, date)).not.toEqual([]);
  });

  it.each(['0001-01-01', '9999-12-31', '2024-02-29', '2000-02-29', '0400-02-29'])('when the date is %s, then it is accepted', (date) => {
    expect(isoDate.parse(date)).toBe(date);
  });

  it('when a date-time has no zone, no seconds, or falls outside the years 1 to 9999 in UTC, then it is refused with one reason', () => {
    expect(issues(isoDateTime, '2026-11-01T10:00:00')).toHaveLength(1);
    expect(issues(isoDateTime, '2026-11-01T10:00Z')).toHaveLength(1);
    expect(issues(isoDateTime, 'yesterday')).toHaveLength(1);
    expect(issues(isoDateTime, '9999-12-31T23:00:00-05:00')).toEqual([{ path: '', message: 'must fall in the years 1 to 9999 (UTC)' }]);
    expect(isoDateTime.parse('2026-11-01T10:00:00.123+02:00')).toBe('2026-11-01T10:00:00.123+02:00');
  });

  it('when a pair is out of order, then 400 names the later field, also inside arrays', () => {
    const contract = { customerId: 'cus_1', currency: 'EUR', startDate: '2026-03-01', plans: [{ planId: 'pln_1' }] };
    expect(issues(createContractBody, { ...contract, endDate: '2026-02-28' })).toEqual([{ path: 'endDate', message: 'must not be before startDate' }]);
    expect(issues(createContractBody, { ...contract, endDate: '2026-03-01' })).toEqual([]);
    const invoice = { contractPlanId: 'cpl_1', invoiceData: { date: '2026-03-01' } };
    expect(issues(createInvoiceBody, { ...invoice, invoiceItems: [{ title: 'a', quantity: 1, price: 1, fromDate: '2026-03-02', toDate: '2026-03-01' }] })).toEqual([
      { path: 'invoiceItems.0.toDate', message: 'must not be before fromDate' },
    ]);
    expect(issues(usageListQuery, { from: '2026-03-01T10:00:00+02:00', to: '2026-03-01T09:00:00Z' })).toEqual([]);
    expect(issues(usageListQuery, { from: '2026-03-01T10:00:00Z', to: '2026-03-01T09:00:00Z' })).toEqual([{ path: 'to', message: 'must not be before from' }]);
  });
});

describe('text and codes', () => {
  it('when a currency is not an ISO 4217 code in upper case, then it is refused', () => {
    expect(isoCurrency.parse('EUR')).toBe('EUR');
    for (const code of ['eur', 'XYZ', 'EURO', '']) expect(issues(isoCurrency, code)).toHaveLength(1);
    // Codes without a minor unit in ISO 4217 are not money: "no currency", testing, gold.
    for (const code of ['XXX', 'XTS', 'XAU']) expect([code, issues(isoCurrency, code)]).toEqual([code, [expect.anything()]]);
    for (const code of ['XAF', 'XOF', 'XCD', 'XPF']) expect([code, issues(isoCurrency, code)]).toEqual([code, []]);
  });

  it('when a name is blank or too long as sent, then it is refused; length counts characters, not UTF-16 units', () => {
    const name = text(3);
    expect(name.parse(' ab')).toBe('ab');
    expect(issues(name, '  ab ')).toEqual([{ path: '', message: 'must be at most 3 characters' }]);
    expect(name.parse('😀😀😀')).toBe('😀😀😀');
    expect(issues(name, ' \t\u00a0')).toEqual([{ path: '', message: 'must not be blank' }]);
    expect(issues(name, 'abcd')).toEqual([{ path: '', message: 'must be at most 3 characters' }]);
  });
});

describe('e-mail addresses', () => {
  it.each(['billing@acme.test', 'x.y+z@mail.example.com', '0@0.com', "o'neil@a-b.example.org", 'a@xn--bcher-kva.example', 'a@abc--d.com'])('when %s is given, then it is taken', (address) => {
    expect(emailAddress.safeParse(address).success).toBe(true);
  });

  it.each(['LS9kO.295u.Kr@vq5yuQA-.jX.UzuAhTZH', 'a@-b.com', 'wd@0k.BH--G.eW', 'a@b', 'a..b@c.com', '.a@b.com', 'a@b.c'])('when %s is given (a label ending or starting in -, -- in a label\'s third and fourth places, no top-level domain, two dots), then it is refused', (address) => {
    expect(emailAddress.safeParse(address).success).toBe(false);
  });
});
