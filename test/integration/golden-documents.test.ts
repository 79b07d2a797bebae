import { addressLines } from '../../src/domain/document-locale';
import { renderInvoicePdf, type InvoiceDocument } from '../../src/modules/invoices';
import { MAX_CHANGED_RATIO, comparePages, expectMatchesGolden, renderFirstPage } from './support/golden';
import { pdfText } from './support/read-back';

/**
 * The reference invoice and credit note: fixed data, rendered by the real renderer and poppler, compared
 * with the images in test/integration/golden/. A layout change shows here first; when it is meant,
 * `UPDATE_GOLDEN=1 npx jest test/integration/golden-documents.test.ts` renders the images again, to be
 * reviewed and committed with the change.
 */
const LOCALE = 'en-GB';

const INVOICE: InvoiceDocument = {
  number: 'INV-000042',
  status: 'sent',
  date: '2026-11-01',
  fromDate: '2026-11-01',
  toDate: '2026-11-30',
  dueDate: '2026-12-01',
  currency: 'GBP',
  locale: LOCALE,
  customerReference: 'Cost centre 42',
  purchaseOrderNumber: 'PO-2026-117',
  seller: { name: 'Seller Ltd', taxId: 'GB123456789', addressLines: addressLines({ line1: '1 Market Street', city: 'London', postalCode: 'EC1A 1BB', country: 'GB' }, LOCALE) },
  customer: { name: 'Customer Ltd', taxId: 'GB987654321', addressLines: addressLines({ line1: '12 Piccadilly', line2: 'Floor 3', city: 'Manchester', postalCode: 'M1 1AE', country: 'GB' }, LOCALE) },
  items: [
    { title: 'Consulting', description: 'Days of consulting in November', quantity: '12', price: '1250', amount: '15000.00' },
    { title: 'Platform fee', description: null, quantity: '1', price: '105079', amount: '105079.00' },
    { title: 'Seats', description: null, quantity: '25', price: '12.5', amount: '312.50' },
  ],
  subtotal: '120391.50',
  taxes: [{ name: 'VAT', rate: '20', amount: '24078.30' }],
  total: '144469.80',
  baseCurrency: 'GBP',
  baseTotal: '144469.80',
  settled: {
    lines: [
      { date: '2026-11-10', label: 'Credit note CN-000007', amount: '-1500' },
      { date: '2026-11-15', label: 'Payment, bank transfer, ref BACS-4711', amount: '-100000' },
    ],
    amountDue: '42969.8',
  },
  paymentDetails: {
    accountHolder: 'Seller Ltd',
    bankName: 'Example Bank plc',
    accountNumber: '20-00-00 12345678',
    iban: 'GB33BUKB20201555555555',
    bic: 'BUKBGB22',
    paymentLink: 'https://pay.example.com/inv-000042',
    reference: 'Invoice INV-000042',
  },
  template: {
    accentColor: '#1e40af',
    footerText: 'Seller Ltd · 1 Market Street, London EC1A 1BB · VAT GB123456789',
    legalText: 'Payment within 30 days of the invoice date. Late payments bear interest at 8% over base rate.',
    logo: null,
  },
};

const CREDIT_NOTE: InvoiceDocument = {
  ...INVOICE,
  heading: 'Credit note CN-000007',
  notes: ['Credits invoice INV-000042 of 01/11/2026', 'Reason: Two days not delivered'],
  number: 'CN-000007',
  status: 'issued',
  date: '2026-11-10',
  dueDate: null,
  items: [{ title: 'Consulting', description: null, quantity: '1', price: '1250', amount: '1250.00' }],
  subtotal: '1250.00',
  taxes: [{ name: 'Tax credited', rate: null, amount: '250.00' }],
  total: '1500.00',
  baseCurrency: null,
  baseTotal: null,
  settled: undefined,
  paymentDetails: null,
};

const pageOf = async (document: InvoiceDocument) => renderFirstPage(await renderInvoicePdf(document));

describe('golden documents', () => {
  it('when the reference invoice is rendered, then its first page matches the golden image', async () => {
    expectMatchesGolden('invoice', await pageOf(INVOICE));
  });

  it('when the reference credit note is rendered, then its first page matches the golden image', async () => {
    expectMatchesGolden('credit-note', await pageOf(CREDIT_NOTE));
  });

  it('when the same document is rendered twice, then the PDFs are the same bytes and the pages the same pixels', async () => {
    const [first, second] = [await renderInvoicePdf(INVOICE), await renderInvoicePdf(INVOICE)];
    expect(first.equals(second)).toBe(true);
    expect(comparePages(renderFirstPage(first), renderFirstPage(second)).changed).toBe(0);
  });

  it('when a text holds a no-break space, or a locale groups figures with one, then the document renders with a space there', async () => {
    const french = await renderInvoicePdf({ ...INVOICE, locale: 'fr-FR', items: [{ title: 'Conseil\u00a0annuel', description: null, quantity: '2000', price: '1250', amount: '2500000.00' }] });
    const text = pdfText(french);
    expect(text).toContain('Conseil annuel');
    expect(text).toMatch(/2 500 000,00/);
  });

  it('when an invoice runs over several pages, then each row, and each total with its label, stays on one page; a wide figure stays on one line', async () => {
    const items = Array.from({ length: 80 }, (_, i) => ({ title: `Item ${i + 1}`, description: null, quantity: '1', price: '10', amount: '10.00' }));
    const huge = { title: 'Item huge', description: null, quantity: '1000', price: '99999999.99', amount: '99999999990.00' };
    const pdf = await renderInvoicePdf({ ...INVOICE, items: [...items, huge], subtotal: '100000000790.00', total: '118999999988.10', baseTotal: '118999999988.10' });
    const pages = pdfText(pdf).split('\f').filter((page) => page.trim() !== '');
    expect(pages.length).toBeGreaterThan(1);
    for (let i = 1; i <= 80; i += 1) {
      const holding = pages.filter((page) => new RegExp(`^\\s*Item ${i}\\s+1\\s+10\\.00\\s+10\\.00\\s*$`, 'm').test(page));
      expect([i, holding.length]).toEqual([i, 1]);
    }
    expect(pages.filter((page) => /Item huge\s+1,000\s+99,999,999\.99\s+99,999,999,990\.00/.test(page))).toHaveLength(1);
    expect(pages.filter((page) => /Total GBP\s+118,999,999,988\.10/.test(page)).length).toBeGreaterThanOrEqual(1);
  });

  it('when the layout changes (a block goes, a line is added), then more pixels change than the comparison allows', async () => {
    const reference = await pageOf(INVOICE);
    const withoutPaymentDetails = comparePages(reference, await pageOf({ ...INVOICE, paymentDetails: null }));
    const withAnotherLine = comparePages(reference, await pageOf({ ...INVOICE, items: [...INVOICE.items, { title: 'Support', description: null, quantity: '1', price: '10', amount: '10.00' }] }));
    expect(withoutPaymentDetails.ratio).toBeGreaterThan(MAX_CHANGED_RATIO);
    expect(withAnotherLine.ratio).toBeGreaterThan(MAX_CHANGED_RATIO);
  });
});
