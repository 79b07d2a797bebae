import { formatInvoiceNumber, isValidInvoiceNumberFormat } from '../../src/domain/invoice-number';

describe('invoice number templates', () => {
  it('when the template pads the number and names the year, then both are filled', () => {
    expect(formatInvoiceNumber('INV-{year}-{number:6}', 42, '2026-11-22')).toBe('INV-2026-000042');
  });

  it('when the number is wider than the padding, then it is not cut', () => {
    expect(formatInvoiceNumber('{number:2}', 12345, '2026-01-01')).toBe('12345');
  });

  it('when the template is plain {number}, then the number is bare', () => {
    expect(formatInvoiceNumber('A{number}', 7, '2026-01-01')).toBe('A7');
  });

  it.each([
    ['INV-{number:6}', true],
    ['{year}/{number}', true],
    ['INV-{year}', false],
    ['INV-{number}-{month}', false],
    ['INV-{number', false],
  ])('when the template is %s, then validity is %s', (template, valid) => {
    expect(isValidInvoiceNumberFormat(template)).toBe(valid);
  });
});
