import { Decimal, formatAmount } from '../../domain/money';
import { htmlToText } from '../../mail/html-text';
import type { Mailer } from '../../mail/mailer';
import type { RenderedMail } from '../../mail/templating';
import { renderInvoicePdf, type InvoiceDocument } from './invoice-pdf';

/** An invoice or credit note as a PDF, under the name it is offered and sent with: its number, else its id. */
export async function documentPdf(document: InvoiceDocument, id: string): Promise<{ filename: string; content: Buffer }> {
  return { filename: `${document.number ?? id}.pdf`, content: await renderInvoicePdf(document) };
}

/** The document's PDF as an e-mail attachment. */
export async function pdfAttachment(document: InvoiceDocument, id: string): Promise<{ filename: string; content: Buffer; contentType: string }> {
  return { ...(await documentPdf(document, id)), contentType: 'application/pdf' };
}

/**
 * E-mails a rendered message with the document's PDF attached: the invoice sent, a reminder, a credit
 * note. A message without a text part gets the text of its HTML part, so that both say the same. The
 * Message-ID lets mail systems fold the copies a retried send makes.
 */
export async function mailWithPdf(mailer: Mailer, mail: { to: string[]; message: RenderedMail; document: InvoiceDocument; id: string; messageId: string }): Promise<void> {
  const { message } = mail;
  await mailer.send({
    to: mail.to,
    subject: message.subject,
    html: message.html,
    text: message.text ?? htmlToText(message.html),
    attachments: [await pdfAttachment(mail.document, mail.id)],
    messageId: mail.messageId,
  });
}

/** What the document leaves due, with the currency's decimals as the API writes amounts. */
function amountDueOf(document: InvoiceDocument): string {
  return document.settled ? formatAmount(document.settled.amountDue, document.currency) : document.total;
}

/**
 * The variables every invoice message is rendered with (the invoice and reminder templates, built-in or
 * the organisation's own); `docs/emails.md` lists them. Reminders add `daysOverdue`.
 */
export function invoiceMailVariables(document: InvoiceDocument, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    invoice: {
      number: document.number,
      status: document.status,
      date: document.date,
      dueDate: document.dueDate,
      periodFrom: document.fromDate ?? document.date,
      periodTo: document.toDate ?? document.date,
      currency: document.currency,
      subtotal: document.subtotal,
      total: document.total,
      // What is left to pay once the customer's credit, credit notes and payments are counted, and whether that differs from the total.
      amountDue: amountDueOf(document),
      partlySettled: document.total !== '' && !new Decimal(amountDueOf(document)).equals(document.total),
      baseCurrency: document.baseCurrency,
      baseTotal: document.baseTotal,
    },
    seller: { name: document.seller?.name ?? 'us', taxId: document.seller?.taxId ?? null },
    customer: { name: document.customer?.name ?? null, taxId: document.customer?.taxId ?? null },
    ...extra,
  };
}
