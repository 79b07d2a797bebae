import PDFDocument from 'pdfkit';

export interface InvoiceParty {
  name: string;
  taxId?: string | null;
  addressLines: string[];
}

export interface InvoiceDocument {
  number: string | null;
  status: string;
  date: string;
  fromDate: string | null;
  toDate: string | null;
  dueDate: string | null;
  currency: string;
  seller: InvoiceParty | null;
  customer: InvoiceParty | null;
  items: Array<{ title: string; description: string | null; quantity: string; price: string; amount: string }>;
  subtotal: string;
  taxes: Array<{ name: string; rate: string; amount: string }>;
  total: string;
  baseCurrency: string | null;
  baseTotal: string | null;
}

function party(doc: PDFKit.PDFDocument, heading: string, who: InvoiceParty | null, x: number, y: number): void {
  doc.font('Helvetica-Bold').fontSize(10).text(heading, x, y);
  doc.font('Helvetica').fontSize(10);
  if (!who) {
    doc.text('-', x);
    return;
  }
  doc.text(who.name, x);
  for (const line of who.addressLines) doc.text(line, x);
  if (who.taxId) doc.text(`Tax id: ${who.taxId}`, x);
}

/** A plain, printable invoice: number, dates, seller and customer, items, taxes and totals. */
export function renderInvoicePdf(invoice: InvoiceDocument): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: `Invoice ${invoice.number ?? '(draft)'}` } });
    const chunks: Buffer[] = [];
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);

    doc.font('Helvetica-Bold').fontSize(20).text(invoice.number ? `Invoice ${invoice.number}` : 'Draft invoice');
    doc.font('Helvetica').fontSize(10).moveDown(0.5);
    doc.text(`Date: ${invoice.date}`);
    if (invoice.dueDate) doc.text(`Due: ${invoice.dueDate}`);
    if (invoice.fromDate || invoice.toDate) doc.text(`Period: ${invoice.fromDate ?? ''} to ${invoice.toDate ?? ''}`);
    doc.text(`Status: ${invoice.status}`);

    const partiesTop = doc.y + 15;
    party(doc, 'From', invoice.seller, 50, partiesTop);
    const afterSeller = doc.y;
    party(doc, 'Bill to', invoice.customer, 300, partiesTop);
    doc.y = Math.max(afterSeller, doc.y) + 20;

    const columns = { title: 50, quantity: 300, price: 370, amount: 460 };
    const row = (cells: Record<keyof typeof columns, string>, bold = false) => {
      const y = doc.y;
      doc.font(bold ? 'Helvetica-Bold' : 'Helvetica');
      doc.text(cells.title, columns.title, y, { width: 240 });
      const titleBottom = doc.y;
      doc.text(cells.quantity, columns.quantity, y, { width: 60, align: 'right' });
      doc.text(cells.price, columns.price, y, { width: 80, align: 'right' });
      doc.text(cells.amount, columns.amount, y, { width: 85, align: 'right' });
      doc.y = Math.max(titleBottom, doc.y) + 4;
    };
    row({ title: 'Item', quantity: 'Qty', price: 'Unit price', amount: `Amount (${invoice.currency})` }, true);
    for (const item of invoice.items) {
      row({ title: item.description ? `${item.title}\n${item.description}` : item.title, quantity: item.quantity, price: item.price, amount: item.amount });
    }

    doc.moveDown();
    const total = (label: string, value: string, bold = false) => {
      const y = doc.y;
      doc.font(bold ? 'Helvetica-Bold' : 'Helvetica').text(label, 300, y, { width: 150 });
      doc.text(value, columns.amount, y, { width: 85, align: 'right' });
      doc.moveDown(0.3);
    };
    total('Subtotal', invoice.subtotal);
    for (const tax of invoice.taxes) total(`${tax.name} (${tax.rate}%)`, tax.amount);
    total(`Total ${invoice.currency}`, invoice.total, true);
    if (invoice.baseCurrency && invoice.baseTotal && invoice.baseCurrency !== invoice.currency) {
      total(`Total ${invoice.baseCurrency}`, invoice.baseTotal);
    }
    doc.end();
  });
}
