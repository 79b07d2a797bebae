import fs from 'node:fs';
import path from 'node:path';
import PDFDocument from 'pdfkit';
import { localeAmount, localeDate, localeNumber, localePrice, localeQuantity } from '../../domain/document-locale';
import { printedIban } from '../../domain/bank-details';
import type { PaymentDetails } from '../organisation-settings';

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

/**
 * What an invoice or credit note shows. Dates are calendar days (YYYY-MM-DD) and amounts decimal strings,
 * as the API gives them: the PDF writes them in the document's locale.
 */
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
  /** BCP 47: the customer's locale, else the organisation's. */
  locale: string;
  customerReference?: string | null;
  purchaseOrderNumber?: string | null;
  seller: InvoiceParty | null;
  customer: InvoiceParty | null;
  /** Quantity, price and amount may be empty ('') where a line has none. */
  items: Array<{ title: string; description: string | null; quantity: string; price: string; amount: string }>;
  subtotal: string;
  /** A tax without a rate (the tax a credit note credits) is shown by its name alone. */
  taxes: Array<{ name: string; rate: string | null; amount: string }>;
  total: string;
  baseCurrency: string | null;
  baseTotal: string | null;
  /**
   * The payments and credits section of a raised, sent or paid invoice that anything settles: each line
   * signed as it changes what is due (a payment or a credit note lowers it, a refund raises it), the
   * day it happened where it has one, and the amount left due. Absent when the whole total is due.
   */
  settled?: { lines: Array<{ date: string | null; label: string; amount: string }>; amountDue: string };
  /** The organisation's payment details, the reference resolved; absent on credit notes and when none are set. */
  paymentDetails?: PaymentDetails | null;
  /** Without one, the plain layout. */
  template?: InvoiceTemplateBranding | null;
}

/**
 * The documents' typeface, embedded in every PDF (subset to the glyphs used), so that a document looks
 * the same in every viewer and on every machine: Arimo (SIL Open Font License 1.1, `fonts/LICENSE-Arimo`),
 * whose letters have the widths of Helvetica's, in its Latin subset (Basic Latin, Latin-1, the general
 * punctuation, the euro sign). The files sit beside this one, in src/ as in dist/ (the build copies them).
 */
/** The size of the parties, the table, the totals and the sections. */
const TABLE_FONT_SIZE = 10;

export const FONT_FILES = { regular: 'Arimo-Regular-latin.woff', bold: 'Arimo-Bold-latin.woff' } as const;
const FONT_DIR = path.join(__dirname, 'fonts');
const REGULAR = 'Document';
const BOLD = 'Document-Bold';
let fonts: { regular: Buffer; bold: Buffer } | undefined;

/** Read once, on the first document. */
function fontFiles(): { regular: Buffer; bold: Buffer } {
  fonts ??= { regular: fs.readFileSync(path.join(FONT_DIR, FONT_FILES.regular)), bold: fs.readFileSync(path.join(FONT_DIR, FONT_FILES.bold)) };
  return fonts;
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
    doc.font(REGULAR).fontSize(FOOTER.fontSize).fillColor(FOOTER.color);
    const boxHeight = doc.currentLineHeight(true) * FOOTER.lines;
    doc.text(footer, margins.left, height - bottom + 8, { width: width - margins.left - margins.right, height: boxHeight, align: 'center', ellipsis: true });
    margins.bottom = bottom;
  }
  doc.fillColor(TEXT_COLOR);
}

function party(doc: PDFKit.PDFDocument, heading: string, who: InvoiceParty | null, x: number, y: number): void {
  doc.font(BOLD).fontSize(10).text(heading, x, y);
  doc.font(REGULAR).fontSize(10);
  if (!who) {
    doc.text('-', x);
    return;
  }
  doc.text(who.name, x);
  for (const line of who.addressLines) doc.text(line, x);
  if (who.taxId) doc.text(`Tax id: ${who.taxId}`, x);
}

/** A calendar day as the instant the PDF's metadata dates it: the document's own date, never the time of rendering. */
const dayInstant = (day: string) => new Date(`${day.slice(0, 10)}T00:00:00Z`);

/** The lines of a payment details block, only the fields set, in the order a payer reads them. */
function paymentDetailLines(details: PaymentDetails): Array<[string, string]> {
  const lines: Array<[string, string | undefined]> = [
    ['Account holder', details.accountHolder],
    ['Bank', details.bankName],
    ['Account number', details.accountNumber],
    ['IBAN', details.iban === undefined ? undefined : printedIban(details.iban)],
    ['BIC', details.bic],
    ['Reference', details.reference],
  ];
  return lines.filter((line): line is [string, string] => Boolean(line[1]));
}

/**
 * A plain, printable invoice: number, dates, references, seller and customer, items, taxes and totals,
 * the payments and credits that settle it, and how to pay. Numbers and dates are written in the
 * document's locale. With the organisation's default template: its logo at the top right, its accent
 * colour on the title, the table header and the total, its legal text under the totals and its footer at
 * the bottom of every page. The same document always renders to the same bytes (the metadata is dated
 * with the document's date, and the fonts are embedded from the repository).
 */
export function renderInvoicePdf(invoice: InvoiceDocument): Promise<Buffer> {
  const template = invoice.template ?? null;
  const footer = template?.footerText?.trim() ? template.footerText : null;
  const { locale, currency } = invoice;
  const money = (value: string, inCurrency = currency) => (value === '' ? '' : localeAmount(value, inCurrency, locale));
  const day = (value: string) => localeDate(value, locale);
  return new Promise((resolve, reject) => {
    // Footers are written once every page exists: the pages stay buffered until then.
    const heading = invoice.heading ?? (invoice.number ? `Invoice ${invoice.number}` : 'Draft invoice');
    const info = { Title: invoice.heading ?? `Invoice ${invoice.number ?? '(draft)'}`, CreationDate: dayInstant(invoice.date) };
    const doc = new PDFDocument({ size: 'A4', margin: 50, info, ...(footer ? { bufferPages: true } : {}) });
    // The embedded fonts' subset has no drawable no-break space (U+00A0, in French and Nordic number groups
    // and in any text a user sends): every text is drawn with a plain space in its place.
    const plain = (text: string) => String(text).replace(/\u00a0/g, ' ');
    const drawText = doc.text.bind(doc) as (text: string, ...rest: unknown[]) => typeof doc;
    doc.text = ((text: string, ...rest: unknown[]) => drawText(plain(text), ...rest)) as unknown as typeof doc.text;
    /** Starts a new page unless `height` more fits above the bottom margin: a row, or a total with its label, stays on one page. */
    const roomFor = (height: number) => {
      if (doc.y + height > doc.page.height - doc.page.margins.bottom) doc.addPage();
    };
    /** A figure right-aligned in its column on one line: a figure wider than the column is drawn smaller, never wrapped. */
    const figure = (text: string, x: number, y: number, width: number) => {
      const size = TABLE_FONT_SIZE;
      let scaled = size;
      while (scaled > 5 && doc.fontSize(scaled).widthOfString(plain(text)) > width) scaled -= 0.5;
      doc.text(text, x, y, { width, align: 'right', lineBreak: false });
      doc.fontSize(size);
      doc.y = y + doc.currentLineHeight(true);
    };
    const { regular, bold } = fontFiles();
    doc.registerFont(REGULAR, regular);
    doc.registerFont(BOLD, bold);
    doc.font(REGULAR);
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
    doc.font(BOLD).fontSize(20).text(heading, template?.logo ? { width: 280 } : {});
    accent(false);
    doc.font(REGULAR).fontSize(10).moveDown(0.5);
    doc.text(`Date: ${day(invoice.date)}`);
    if (invoice.dueDate) doc.text(`Due: ${day(invoice.dueDate)}`);
    if (invoice.fromDate || invoice.toDate) doc.text(`Period: ${invoice.fromDate ? day(invoice.fromDate) : ''} to ${invoice.toDate ? day(invoice.toDate) : ''}`);
    if (invoice.customerReference) doc.text(`Your reference: ${invoice.customerReference}`);
    if (invoice.purchaseOrderNumber) doc.text(`Purchase order: ${invoice.purchaseOrderNumber}`);
    doc.text(`Status: ${invoice.status}`);
    for (const note of invoice.notes ?? []) doc.text(note);

    const partiesTop = Math.max(doc.y + 15, logoBottom + 10);
    party(doc, 'From', invoice.seller, 50, partiesTop);
    const afterSeller = doc.y;
    party(doc, 'Bill to', invoice.customer, 300, partiesTop);
    doc.y = Math.max(afterSeller, doc.y) + 20;

    const columns = { title: 50, quantity: 300, price: 370, amount: 460 };
    const row = (cells: Record<keyof typeof columns, string>, bold = false) => {
      doc.font(bold ? BOLD : REGULAR);
      roomFor(Math.max(doc.heightOfString(plain(cells.title), { width: 240 }), doc.currentLineHeight(true)) + 4);
      const y = doc.y;
      accent(bold);
      doc.text(cells.title, columns.title, y, { width: 240 });
      const titleBottom = doc.y;
      figure(cells.quantity, columns.quantity, y, 60);
      figure(cells.price, columns.price, y, 80);
      figure(cells.amount, columns.amount, y, 85);
      doc.y = Math.max(titleBottom, doc.y) + 4;
    };
    const rule = () => {
      if (!template) return;
      doc.moveTo(columns.title, doc.y - 2).lineTo(columns.amount + 85, doc.y - 2).lineWidth(0.75).strokeColor(template.accentColor).stroke();
      doc.y += 2;
    };
    row({ title: 'Item', quantity: 'Qty', price: 'Unit price', amount: `Amount (${currency})` }, true);
    rule();
    for (const item of invoice.items) {
      row({
        title: item.description ? `${item.title}\n${item.description}` : item.title,
        quantity: item.quantity === '' ? '' : localeQuantity(item.quantity, locale),
        price: item.price === '' ? '' : localePrice(item.price, currency, locale),
        amount: money(item.amount),
      });
    }

    doc.moveDown();
    const total = (label: string, value: string, bold = false) => {
      doc.font(bold ? BOLD : REGULAR);
      roomFor(Math.max(doc.heightOfString(plain(label), { width: 150 }), doc.currentLineHeight(true)));
      const y = doc.y;
      accent(bold);
      doc.text(label, 300, y, { width: 150 });
      const labelBottom = doc.y;
      figure(value, columns.amount, y, 85);
      doc.y = Math.max(labelBottom, doc.y);
      accent(false);
      doc.moveDown(0.3);
    };
    total('Subtotal', money(invoice.subtotal));
    for (const tax of invoice.taxes) total(tax.rate === null ? tax.name : `${tax.name} (${localeNumber(tax.rate, locale, 0, 6)}%)`, money(tax.amount));
    total(`Total ${currency}`, money(invoice.total), true);
    if (invoice.baseCurrency && invoice.baseTotal && invoice.baseCurrency !== currency) {
      total(`Total ${invoice.baseCurrency}`, money(invoice.baseTotal, invoice.baseCurrency));
    }

    const left = doc.page.margins.left;
    const width = doc.page.width - left - doc.page.margins.right;
    const sectionHeading = (title: string) => {
      doc.moveDown(1.5);
      accent(true);
      doc.font(BOLD).fontSize(10).text(title, left, doc.y, { width });
      accent(false);
      doc.font(REGULAR).moveDown(0.3);
    };
    if (invoice.settled) {
      sectionHeading('Payments and credits');
      const line = (cells: { date: string; label: string; amount: string }, bold = false) => {
        doc.font(bold ? BOLD : REGULAR);
        roomFor(Math.max(doc.heightOfString(plain(cells.label), { width: columns.amount - columns.title - 80 }), doc.currentLineHeight(true)) + 3);
        const y = doc.y;
        doc.text(cells.date, columns.title, y, { width: 70 });
        doc.text(cells.label, columns.title + 75, y, { width: columns.amount - columns.title - 80 });
        const labelBottom = doc.y;
        figure(cells.amount, columns.amount, y, 85);
        doc.y = Math.max(labelBottom, doc.y) + 3;
      };
      line({ date: 'Date', label: 'Description', amount: `Amount (${currency})` }, true);
      rule();
      line({ date: '', label: 'Invoice total', amount: money(invoice.total) });
      for (const settled of invoice.settled.lines) line({ date: settled.date ? day(settled.date) : '', label: settled.label, amount: money(settled.amount) });
      doc.moveDown(0.3);
      total(`Amount due ${currency}`, money(invoice.settled.amountDue), true);
    }
    const details = invoice.paymentDetails;
    if (details) {
      sectionHeading('Payment details');
      for (const [label, value] of paymentDetailLines(details)) {
        const y = doc.y;
        doc.text(`${label}:`, left, y, { width: 100 });
        doc.text(value, left + 105, y, { width: width - 105 });
      }
      if (details.paymentLink) {
        const y = doc.y;
        doc.text('Pay online:', left, y, { width: 100 });
        doc.text(details.paymentLink, left + 105, y, { width: width - 105, link: details.paymentLink, underline: true });
      }
    }
    if (template?.legalText?.trim()) {
      doc.moveDown(1.5);
      doc.font(REGULAR).fontSize(8).fillColor(FOOTER.color).text(template.legalText, left, doc.y, { width });
      doc.fillColor(TEXT_COLOR);
    }
    if (footer) writeFooters(doc, footer);
    doc.end();
  });
}
