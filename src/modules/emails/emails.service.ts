import type { Knex } from 'knex';
import { AppError, orNotFound } from '../../domain/errors';
import { textProblem } from '../../domain/storable';
import type { Page, PageQuery } from '../../http/paging';
import type { Mailer, OutgoingMail } from '../../mail/mailer';
import type { MailTemplate, RenderedMail, TemplateRenderer } from '../../mail/templating';
import { emailTemplatesIn, SUBJECT_MAX } from '../email-templates';
import { invoiceSettlements } from '../settlements';
import { loadInvoiceDocument, pdfAttachment, invoicesIn } from '../invoices';
import { createEmailRepository, type EmailRow, type NewEmail } from './emails.repository';
import type { Email, EmailStatus, SendEmailBody } from './emails.schemas';

/** What is kept of a mail server's answer or fault. */
const ERROR_MAX = 1000;

/** A message's id follows from its row, so that every attempt carries the same Message-ID. */
export const messageIdOf = (emailId: string) => `<email-${emailId}@billing>`;

export function toEmail(row: EmailRow): Email {
  return {
    id: row.id,
    status: row.status,
    to: row.to,
    subject: row.subject,
    templateId: row.template_id,
    invoiceId: row.invoice_id,
    messageId: row.message_id,
    attempts: row.attempts,
    error: row.error,
    sentAt: row.sent_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * What the `error` column (which tenants read) keeps of a delivery fault: the mail server's own reply when it
 * gave one (`550 Mailbox unavailable`), else only that it could not be reached, with the fault's code. The
 * fault's message names the operator's network (`connect ECONNREFUSED 10.0.3.7:587`): that stays in the
 * activity's failure, which operators read in the Temporal UI.
 */
export function deliveryError(error: unknown): string {
  const { responseCode, code } = (error ?? {}) as { responseCode?: unknown; code?: unknown };
  if (typeof responseCode === 'number' && error instanceof Error) return storable(error.message);
  return typeof code === 'string' && /^[A-Z][A-Z_]{1,31}$/.test(code) ? `the mail server could not be reached (${code})` : 'the mail server could not be reached';
}

/** Text as the `error` column keeps it: bounded, and storable. */
function storable(message: string): string {
  // A round trip through UTF-8 replaces any unpaired surrogate; NUL is the one character text cannot hold.
  return [...Buffer.from(message.replaceAll('\u0000', ''), 'utf8').toString('utf8')].slice(0, ERROR_MAX).join('');
}

/** What a message that every attempt failed to send says, when no attempt reached the mail server's reply. */
const GAVE_UP = 'every attempt to send the message failed';

/** A refusal the mail server gave for good (a 5xx reply): sending the same message again fails the same way. */
function permanentRefusal(error: unknown): boolean {
  const code = (error as { responseCode?: unknown }).responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
}

/** What one delivery attempt came to; a fault worth retrying is thrown instead. */
export type EmailOutcome = 'sent' | 'refused';

/**
 * Messages sent through `POST /emails`: rendered and stored when they are asked for, then handed to the
 * mail server by the worker, at least once, each attempt with the same Message-ID.
 */
export function createEmailService(deps: { db: Knex; mailer: Mailer; templates: TemplateRenderer }) {
  const { db, mailer, templates } = deps;
  const emails = createEmailRepository(db);

  /**
   * The message a request asks for, rendered in a render thread within the template budget (a template
   * over it answers 422; the output limit also bounds what reaches the columns), its three parts checked
   * before they reach a column.
   */
  async function render(organisationId: string, body: SendEmailBody): Promise<RenderedMail & { templateId: string | null }> {
    let template: MailTemplate;
    if (body.templateId !== undefined) {
      const row = await emailTemplatesIn(db).find(organisationId, body.templateId);
      if (!row) throw AppError.notFound('E-mail template');
      template = row;
    } else {
      template = { subject: body.subject!, html: body.html!, text: body.text ?? null };
    }
    const rendered = await templates.render(template, body.variables ?? {});
    const problems: Array<[string, string | undefined]> = [
      ['subject', rendered.subject.length === 0 ? 'renders as nothing' : [...rendered.subject].length > SUBJECT_MAX ? `renders longer than ${SUBJECT_MAX} characters` : textProblem(rendered.subject)],
      ['html', textProblem(rendered.html)],
      ['text', rendered.text === null ? undefined : textProblem(rendered.text)],
    ];
    const found = problems.find(([, problem]) => problem !== undefined);
    if (found) throw AppError.validation(`the ${found[0]} ${found[1]}`, 'body.variables');
    return { ...rendered, templateId: body.templateId ?? null };
  }

  return {
    /** The row of a message asked for: rendered now, so that a template or variable fault answers 400. */
    async prepare(organisationId: string, id: string, body: SendEmailBody, createdBy: string | null): Promise<NewEmail> {
      if (body.invoiceId !== undefined && !(await invoicesIn(db).findRow(organisationId, body.invoiceId))) {
        throw AppError.notFound('Invoice');
      }
      const rendered = await render(organisationId, body);
      return {
        id,
        organisation_id: organisationId,
        template_id: rendered.templateId,
        to: [...new Set(body.to)],
        subject: rendered.subject,
        html: rendered.html,
        text: rendered.text,
        invoice_id: body.invoiceId ?? null,
        message_id: messageIdOf(id),
        created_by: createdBy,
      };
    },

    async create(email: NewEmail): Promise<Email> {
      return toEmail(await emails.create(email));
    },

    /** Forgets a message that nothing will send (its workflow could not be started). */
    async discard(organisationId: string, id: string): Promise<void> {
      await emails.delete(organisationId, id);
    },

    async get(organisationId: string, id: string): Promise<Email> {
      return toEmail(orNotFound(await emails.find(organisationId, id), 'Email'));
    },

    async list(organisationId: string, filter: { status?: EmailStatus }, paging: PageQuery): Promise<Page<Email>> {
      const page = await emails.list(organisationId, filter, paging);
      return { ...page, items: page.items.map(toEmail) };
    },

    /**
     * One attempt: the message, with the invoice's PDF as it is now when one is named, handed to the mail
     * server. Sent once recorded, never again; a crash between the hand-over and the record sends it again
     * with the same Message-ID, so that mail systems fold the copies. A 5xx refusal fails the message for
     * good; any other fault is noted on it and thrown, for the activity to retry.
     */
    async deliver(input: { organisationId: string; emailId: string }): Promise<EmailOutcome> {
      const row = orNotFound(await emails.find(input.organisationId, input.emailId), 'Email');
      if (row.status === 'sent') return 'sent';
      if (row.status === 'failed') return 'refused';
      await emails.countAttempt(row.id);
      const mail: OutgoingMail = { to: row.to, subject: row.subject, html: row.html, ...(row.text === null ? {} : { text: row.text }), messageId: row.message_id };
      if (row.invoice_id) {
        const document = await loadInvoiceDocument(db, row.organisation_id, row.invoice_id, invoiceSettlements);
        mail.attachments = [await pdfAttachment(document, 'draft-invoice')];
      }
      try {
        await mailer.send(mail);
      } catch (error) {
        if (permanentRefusal(error)) {
          await emails.markFailed(row.id, deliveryError(error));
          return 'refused';
        }
        await emails.noteError(row.id, deliveryError(error));
        throw error;
      }
      await emails.markSent(row.id);
      return 'sent';
    },

    /**
     * Every attempt failed: the message will not be sent. It keeps the fault its last attempt noted; the
     * workflow's `error` (the raw fault, which may be any, not only the mail server's) is not shown to tenants.
     */
    async fail(input: { organisationId: string; emailId: string; error: string }): Promise<void> {
      await emails.markGivenUp(input.emailId, GAVE_UP);
    },
  };
}

export type EmailService = ReturnType<typeof createEmailService>;
