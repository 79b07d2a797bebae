import { z } from 'zod';
import { atLeastOne, freeText, text } from '../../http/schemas';

/** `invoice` goes with an invoice that is sent, `reminder` with an overdue invoice's reminders, `custom` through `POST /emails`. */
export const EMAIL_TEMPLATE_KINDS = ['invoice', 'reminder', 'custom'] as const;
export type EmailTemplateKind = (typeof EMAIL_TEMPLATE_KINDS)[number];

/** A subject longer than a mail header line (998 characters) would be folded by every mail system. */
export const SUBJECT_MAX = 998;
/** Bounds of the template sources, in characters; each column is text, so these are the only limits. */
export const HTML_MAX = 200_000;
export const TEXT_MAX = 100_000;

const name = text(200);
const kind = z.enum(EMAIL_TEMPLATE_KINDS).describe('invoice and reminder replace the built-in messages; an organisation has one of each at most');
const subject = text(SUBJECT_MAX).describe('a Handlebars template, rendered as plain text');
const html = text(HTML_MAX).describe('a Handlebars template: {{value}} is HTML-escaped, {{{value}}} is not');
const textPart = freeText(TEXT_MAX).describe('a Handlebars template for the plain-text part, rendered as plain text');

export const createTemplateBody = z.object({ name, kind, subject, html, text: textPart.nullable().optional() });

export const updateTemplateBody = atLeastOne({ name: name.optional(), subject: subject.optional(), html: html.optional(), text: textPart.nullable().optional() });

export const templateSchema = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(EMAIL_TEMPLATE_KINDS),
  subject: z.string(),
  html: z.string(),
  text: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export type EmailTemplate = z.infer<typeof templateSchema>;
