import { z } from 'zod';
import { atLeastOne, freeText, text } from '../../http/schemas';

/** Bounds of the template's text, in characters; each column is text, so these are the only limits. */
export const NAME_MAX = 200;
/** The footer is printed at the bottom of every page, in the page's margin: up to three lines show. */
export const FOOTER_MAX = 300;
export const LEGAL_TEXT_MAX = 2000;

/** The largest logo accepted, in bytes. */
export const LOGO_MAX_BYTES = 512 * 1024;
/** The largest logo accepted, in pixels on each side: the PDF shows it at most 150×60 points. */
export const LOGO_MAX_SIDE = 1000;

export const DEFAULT_ACCENT_COLOR = '#1f2937';

const name = text(NAME_MAX);
const accentColor = z
  .string()
  .regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour #rrggbb')
  .transform((value) => value.toLowerCase())
  .describe('a colour #rrggbb for the title, the table header and the total; kept in lower case');
const footerText = freeText(FOOTER_MAX).describe('printed at the bottom of every page');
const legalText = freeText(LEGAL_TEXT_MAX).describe('printed under the totals');
const isDefault = z.boolean().describe("true makes it the organisation's default, the one invoice PDFs use; the previous default stops being one");

export const createTemplateBody = z.object({
  name,
  accentColor: accentColor.default(DEFAULT_ACCENT_COLOR),
  footerText: footerText.nullable().optional(),
  legalText: legalText.nullable().optional(),
  isDefault: isDefault.default(false),
});

export const updateTemplateBody = atLeastOne({
  name: name.optional(),
  accentColor: accentColor.optional(),
  footerText: footerText.nullable().optional(),
  legalText: legalText.nullable().optional(),
  isDefault: isDefault.optional(),
});

export type CreateTemplateBody = z.output<typeof createTemplateBody>;
export type UpdateTemplateBody = z.output<typeof updateTemplateBody>;

export const logoSchema = z.object({
  contentType: z.literal('image/png').describe('every logo is stored as a PNG of its pixels'),
  size: z.number().int().describe('in bytes'),
  sha256: z.string().describe('of the bytes, in hex'),
});

export const templateSchema = z.object({
  id: z.string(),
  name: z.string(),
  accentColor: z.string(),
  footerText: z.string().nullable(),
  legalText: z.string().nullable(),
  isDefault: z.boolean(),
  logo: logoSchema.nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export type InvoiceTemplate = z.infer<typeof templateSchema>;
