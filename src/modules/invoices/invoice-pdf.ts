import PDFDocument from 'pdfkit';

export interface InvoiceParty {
  name: string;
  taxId?: string | null;
  addressLines: string[];
}

/** The branding of the organisation's default invoice template. */
export interface InvoiceTemplateBranding {
  /** #rrggbb: the title, the table header and the total. */
  accentColor: string;
  /** At the bottom of every page. */
  footerText: string | null;
  /** Under the totals. */
  legalText: string | null;
  /** A PNG or JPEG checked when it was uploaded, at the top right of the first page. */
  logo: Buffer | null;
}

export interface InvoiceDocument {
  /** The title, when the document is not an invoice (a credit note); else "Invoice {number}". */
  heading?: string;
  /** Lines under the dates (what a credit note credits, and why). */
  notes?: string[];
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
  /** A tax without a rate (the tax a credit note credits) is shown by its name alone. */
  taxes: Array<{ name: string; rate: string | null; amount: string }>;
  total: string;
  baseCurrency: string | null;
  baseTotal: string | null;
  /**
   * What already settles part of the total (the customer's credit, credit notes), shown under it with
   * the amount left due; absent when the whole total is due.
   */
  settled?: { lines: Array<{ label: string; amount: string }>; amountDue: string };
  /** Without one, the plain layout. */
  template?: InvoiceTemplateBranding | null;
}

const TEXT_COLOR = 'black';
const LOGO_BOX = { width: 150, height: 60 };
const FOOTER = { fontSize: 8, color: '#4b5563', lines: 3 };

/**
 * The footer of every page, inside the bottom margin. The margin is set to 0 while it is written, so that
 * pdfkit never takes the footer for text running off the page and adds one.
 */
function writeFooters(doc: PDFKit.PDFDocument, footer: string): void {
  const range = doc.bufferedPageRange();
  for (let index = range.start; index < range.start + range.count; index += 1) {
    doc.switchToPage(index);
    const { margins, width, height } = doc.page;
    const bottom = margins.bottom;
    margins.bottom = 0;
    doc.font('Helvetica').fontSize(FOOTER.fontSize).fillColor(FOOTER.color);
    const boxHeight = doc.currentLineHeight(true) * FOOTER.lines;
    doc.text(footer, margins.left, height - bottom + 8, { width: width - margins.left - margins.right, height: boxHeight, align: 'center', ellipsis: true });
    margins.bottom = bottom;
  }
  doc.fillColor(TEXT_COLOR);
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

/**
 * A plain, printable invoice: number, dates, seller and customer, items, taxes and totals. With the
 * organisation's default template: its logo at the top right, its accent colour on the title, the table
 * header and the total, its legal text under the totals and its footer at the bottom of every page.
 */
export function renderInvoicePdf(invoice: InvoiceDocument): Promise<Buffer> {
  const template = invoice.template ?? null;
  const footer = template?.footerText?.trim() ? template.footerText : null;
  return new Promise((resolve, reject) => {
    // Footers are written once every page exists: the pages stay buffered until then.
    const heading = invoice.heading ?? (invoice.number ? `Invoice ${invoice.number}` : 'Draft invoice');
    const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: invoice.heading ?? `Invoice ${invoice.number ?? '(draft)'}` }, ...(footer ? { bufferPages: true } : {}) });
    const chunks: Buffer[] = [];
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
    // Colours are set only with a template: without one, the document is what it always was.
    const accent = (on: boolean) => {
      if (template) doc.fillColor(on ? template.accentColor : TEXT_COLOR);
    };

    let logoBottom = 0;
    if (template?.logo) {
      const left = doc.page.width - doc.page.margins.right - LOGO_BOX.width;
      doc.image(template.logo, left, doc.page.margins.top, { fit: [LOGO_BOX.width, LOGO_BOX.height], align: 'right' });
      logoBottom = doc.page.margins.top + LOGO_BOX.height;
    }

    accent(true);
    // Beside a logo, a long title wraps before it reaches the logo.
    doc.font('Helvetica-Bold').fontSize(20).text(heading, template?.logo ? { width: 280 } : {});
    accent(false);
    doc.font('Helvetica').fontSize(10).moveDown(0.5);
    doc.text(`Date: ${invoice.date}`);
    if (invoice.dueDate) doc.text(`Due: ${invoice.dueDate}`);
    if (invoice.fromDate || invoice.toDate) doc.text(`Period: ${invoice.fromDate ?? ''} to ${invoice.toDate ?? ''}`);
    doc.text(`Status: ${invoice.status}`);
    for (const note of invoice.notes ?? []) doc.text(note);

    const partiesTop = Math.max(doc.y + 15, logoBottom + 10);
    party(doc, 'From', invoice.seller, 50, partiesTop);
    const afterSeller = doc.y;
    party(doc, 'Bill to', invoice.customer, 300, partiesTop);
    doc.y = Math.max(afterSeller, doc.y) + 20;

    const columns = { title: 50, quantity: 300, price: 370, amount: 460 };
    const row = (cells: Record<keyof typeof columns, string>, bold = false) => {
      const y = doc.y;
      doc.font(bold ? 'Helvetica-Bold' : 'Helvetica');
      accent(bold);
      doc.text(cells.title, columns.title, y, { width: 240 });
      const titleBottom = doc.y;
      doc.text(cells.quantity, columns.quantity, y, { width: 60, align: 'right' });
      doc.text(cells.price, columns.price, y, { width: 80, align: 'right' });
      doc.text(cells.amount, columns.amount, y, { width: 85, align: 'right' });
      doc.y = Math.max(titleBottom, doc.y) + 4;
    };
    row({ title: 'Item', quantity: 'Qty', price: 'Unit price', amount: `Amount (${invoice.currency})` }, true);
    if (template) {
      doc.moveTo(columns.title, doc.y - 2).lineTo(columns.amount + 85, doc.y - 2).lineWidth(0.75).strokeColor(template.accentColor).stroke();
      doc.y += 2;
    }
    for (const item of invoice.items) {
      row({ title: item.description ? `${item.title}\n${item.description}` : item.title, quantity: item.quantity, price: item.price, amount: item.amount });
    }

    doc.moveDown();
    const total = (label: string, value: string, bold = false) => {
      const y = doc.y;
      accent(bold);
      doc.font(bold ? 'Helvetica-Bold' : 'Helvetica').text(label, 300, y, { width: 150 });
      doc.text(value, columns.amount, y, { width: 85, align: 'right' });
      accent(false);
      doc.moveDown(0.3);
    };
    total('Subtotal', invoice.subtotal);
    for (const tax of invoice.taxes) total(tax.rate === null ? tax.name : `${tax.name} (${tax.rate}%)`, tax.amount);
    total(`Total ${invoice.currency}`, invoice.total, true);
    if (invoice.baseCurrency && invoice.baseTotal && invoice.baseCurrency !== invoice.currency) {
      total(`Total ${invoice.baseCurrency}`, invoice.baseTotal);
    }
    if (invoice.settled) {
      for (const line of invoice.settled.lines) total(line.label, line.amount);
      total(`Amount due ${invoice.currency}`, invoice.settled.amountDue, true);
    }
    if (template?.legalText?.trim()) {
      doc.moveDown(1.5);
      doc.font('Helvetica').fontSize(8).fillColor(FOOTER.color).text(template.legalText, doc.page.margins.left, doc.y, { width: doc.page.width - doc.page.margins.left - doc.page.margins.right });
      doc.fillColor(TEXT_COLOR);
    }
    if (footer) writeFooters(doc, footer);
    doc.end();
  });
}
