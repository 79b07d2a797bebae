import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { emailAddress, freeText, reference, text } from '../../http/schemas';
import { HTML_MAX, SUBJECT_MAX, TEXT_MAX } from '../email-templates';

export const EMAIL_STATUSES = ['queued', 'sent', 'failed'] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

/** Recipients of one message; a larger mailing is not what this endpoint is for. */
export const MAX_RECIPIENTS = 50;
/** The variables of one message, as JSON: enough for any invoice-sized context. */
export const MAX_VARIABLES_BYTES = 100_000;

const variables = z
  .record(z.string().max(200), z.unknown())
  .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= MAX_VARIABLES_BYTES, `must be at most ${MAX_VARIABLES_BYTES} bytes as JSON`)
  .describe('the values the template refers to, e.g. {"customer": {"name": "Acme"}} for {{customer.name}}');

/**
 * Either a template (`templateId`, with `variables`) or the message itself (`subject` and `html`, which are
 * templates too, rendered with `variables`); never both.
 */
export const sendEmailBody = z
  .object({
    templateId: reference().optional(),
    subject: text(SUBJECT_MAX).optional(),
    html: text(HTML_MAX).optional(),
    text: freeText(TEXT_MAX).optional(),
    to: z.array(emailAddress).min(1).max(MAX_RECIPIENTS),
    variables: variables.optional(),
    invoiceId: reference().optional().describe("attaches the invoice's PDF, rendered when the message is sent"),
  })
  .superRefine((body, ctx) => {
    const ownParts = (['subject', 'html', 'text'] as const).filter((part) => body[part] !== undefined);
    if (body.templateId !== undefined && ownParts.length > 0) {
      ctx.addIssue({ code: 'custom', path: [ownParts[0]!], message: 'give either templateId or subject and html, not both' });
    } else if (body.templateId === undefined) {
      for (const part of ['subject', 'html'] as const) {
        if (body[part] === undefined) ctx.addIssue({ code: 'custom', path: [part], message: 'required unless templateId is given' });
      }
    }
  })
  // A template with none of the message's own parts, or the message's parts (both alternatives matching,
  // with templateId among them, is refused by oneOf).
  .meta({
    oneOf: [
      { required: ['templateId'], properties: { subject: false, html: false, text: false } },
      { required: ['subject', 'html'] },
    ],
  });

export type SendEmailBody = z.output<typeof sendEmailBody>;

export const emailQuery = pageQuery.extend({ status: z.enum(EMAIL_STATUSES).optional() });

export const emailSchema = z.object({
  id: z.string(),
  status: z.enum(EMAIL_STATUSES).describe('queued until the mail server accepts it; failed once it refused it or every attempt failed'),
  to: z.array(z.string()),
  subject: z.string().describe('as rendered'),
  templateId: z.string().nullable(),
  invoiceId: z.string().nullable(),
  messageId: z.string().describe('the Message-ID header, the same on every attempt'),
  attempts: z.number().int(),
  error: z.string().nullable().describe("the mail server's last refusal or fault"),
  sentAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export type Email = z.infer<typeof emailSchema>;
