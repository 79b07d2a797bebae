import fc from 'fast-check';
import { taxesInForce, type ContractTax } from '../../src/modules/contracts';
import { priceInvoice } from '../../src/modules/invoices/invoice-pricing';

const vat = (rate: string, effectiveFrom: string | null): ContractTax => ({ lineId: 'tax_vat', effectiveFrom, name: 'VAT', rate, appliesTo: 'all' });
const city = (rate: string, effectiveFrom: string | null, appliesTo: 'all' | string[] = ['bpi_fee']): ContractTax => ({ lineId: 'tax_city', effectiveFrom, name: 'City', rate, appliesTo });

describe('taxes by version', () => {
  it('takes the version of each line in force on a day, the last without a day, and none before a line begins', () => {
    const taxes = [vat('20', null), vat('25', '2026-11-01'), city('2', '2026-07-01')];
    expect(taxesInForce(taxes, '2026-06-30').map((tax) => tax.rate)).toEqual(['20']);
    expect(taxesInForce(taxes, '2026-10-31').map((tax) => tax.rate)).toEqual(['20', '2']);
    expect(taxesInForce(taxes, '2026-11-01').map((tax) => tax.rate)).toEqual(['25', '2']);
    expect(taxesInForce(taxes, null).map((tax) => tax.rate)).toEqual(['25', '2']);
  });

  it('taxes each line by the versions in force on its first day, one tax line per version over its own lines, the date for lines without days', () => {
    const taxes = [vat('20', null), vat('25', '2026-11-01'), city('2', null)];
    const priced = priceInvoice(
      [
        { quantity: '1', price: '100', plan_item_id: 'bpi_fee', from_date: '2026-11-01' },
        { quantity: '6', price: '0.5', plan_item_id: 'bpi_calls', from_date: '2026-09-01' },
        { quantity: '1', price: '-10', plan_item_id: 'bpi_fee', from_date: '2026-10-15' },
        { quantity: '1', price: '5', plan_item_id: null },
      ],
      taxes,
      'EUR',
      '2026-12-01',
    );
    expect(priced.taxes.map((tax) => [tax.name, tax.rate, tax.lines, tax.amount.toFixed(2)])).toEqual([
      ['VAT', '20', [1, 2], '-1.40'],
      ['VAT', '25', [0, 3], '26.25'],
      ['City', '2', [0, 2], '1.80'],
    ]);
    expect(priced.total.toFixed(2)).toBe((98 + 26.65).toFixed(2));
  });

  it('when a coupon line discounts months taxed by two versions, then it is shared over them by amount, each share lowering its own version', () => {
    // July to September at 100.00, VAT 10 % then 20 % from September, one 50 % discount line over the three.
    const month = (from: string, to: string) => ({ quantity: '1', price: '100', plan_item_id: 'bpi_fee', from_date: from, to_date: to });
    const priced = priceInvoice(
      [
        month('2026-07-01', '2026-07-31'),
        month('2026-08-01', '2026-08-31'),
        month('2026-09-01', '2026-09-30'),
        { quantity: '1', price: '-150', plan_item_id: 'bpi_fee', from_date: '2026-07-01', to_date: '2026-09-30', coupon_id: 'cpn_half' },
      ],
      [vat('10', null), vat('20', '2026-09-01')],
      'EUR',
      '2026-09-01',
    );
    expect(priced.taxes.map((tax) => [tax.rate, tax.lines, tax.amount.toFixed(2)])).toEqual([
      ['10', [0, 1, 3], '10.00'],
      ['20', [2, 3], '10.00'],
    ]);
    expect(priced.total.toFixed(2)).toBe('170.00');
  });

  it('when a coupon line starts on a day of the old rate but only days of the new rate charge, then it lowers the new rate alone; a give-back in its days lowers the base it is shared by', () => {
    const taxes = [vat('10', null), vat('20', '2026-09-01')];
    const line = (price: string, from: string, to: string) => ({ quantity: '1', price, plan_item_id: 'bpi_fee', from_date: from, to_date: to });
    const coupon = (price: string) => ({ ...line(price, '2026-08-01', '2026-09-30'), coupon_id: 'cpn' });
    const nothingInAugust = priceInvoice([line('0', '2026-08-01', '2026-08-31'), line('100', '2026-09-01', '2026-09-30'), coupon('-50')], taxes, 'EUR', '2026-09-01');
    expect(nothingInAugust.taxes.map((tax) => [tax.rate, tax.amount.toFixed(2)])).toEqual([
      ['10', '0.00'],
      ['20', '10.00'],
    ]);
    // August gives back 40.00 (10 %), September charges 100.00 (20 %), and 50 % comes off the 60.00 they add up to.
    const giveBack = priceInvoice([line('-40', '2026-08-01', '2026-08-31'), line('100', '2026-09-01', '2026-09-30'), coupon('-30')], taxes, 'EUR', '2026-09-01');
    expect(giveBack.taxes.map((tax) => [tax.rate, tax.amount.toFixed(2)])).toEqual([
      ['10', '-2.00'],
      ['20', '10.00'],
    ]);
    expect(giveBack.total.toFixed(2)).toBe('38.00');
  });

  it('when the lines a coupon line discounts were all taxed by one version, then it is taxed by that version whole, as any line', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 100_000 }), { minLength: 1, maxLength: 6 }), fc.integer({ min: 0, max: 100 }), (cents, percent) => {
        const lines = cents.map((value, i) => ({ quantity: '1', price: (value / 100).toFixed(2), plan_item_id: 'bpi_fee', from_date: `2026-10-${String(i + 1).padStart(2, '0')}`, to_date: '2026-10-28' }));
        const off = Math.round((cents.reduce((a, b) => a + b, 0) * percent) / 100);
        const discount = { quantity: '1', price: (-off / 100).toFixed(2), plan_item_id: 'bpi_fee', from_date: '2026-10-01', to_date: '2026-10-31', coupon_id: 'cpn' };
        const priced = priceInvoice([...lines, discount], [vat('20', null), vat('25', '2026-11-01')], 'EUR', '2026-11-01');
        const base = cents.reduce((a, b) => a + b, 0) - off;
        expect(priced.taxes.map((tax) => [tax.rate, tax.amount.toFixed(2)])).toEqual([
          ['20', (Math.round(base * 0.2) / 100).toFixed(2)],
          ['25', '0.00'],
        ]);
      }),
    );
  });

  it('when no tax changes, then every line is taxed by the one version, each tax line over the lines it applies to, whatever their days', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ cents: fc.integer({ min: -10_000, max: 10_000 }), day: fc.integer({ min: 1, max: 28 }), fee: fc.boolean() }), { maxLength: 12 }), (lines) => {
        const taxes = [vat('19', null), city('2.5', null)];
        const priced = priceInvoice(
          lines.map((line) => ({ quantity: '1', price: (line.cents / 100).toFixed(2), plan_item_id: line.fee ? 'bpi_fee' : 'bpi_calls', from_date: `2026-10-${String(line.day).padStart(2, '0')}` })),
          taxes,
          'EUR',
          '2026-11-01',
        );
        const sum = (picked: typeof lines) => picked.reduce((total, line) => total + line.cents, 0);
        const round = (cents: number) => Math.sign(cents) * Math.round(Math.abs(cents));
        expect(priced.taxes.map((tax) => tax.amount.times(100).toNumber())).toEqual([round((sum(lines) * 19) / 100), round((sum(lines.filter((line) => line.fee)) * 2.5) / 100)]);
      }),
    );
  });
});
