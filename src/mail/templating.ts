import Handlebars from 'handlebars';
import { AppError } from '../domain/errors';

/** The parts of an e-mail a template gives: each a Handlebars template. */
export interface MailTemplate {
  subject: string;
  html: string;
  text: string | null;
}

export interface RenderedMail {
  subject: string;
  html: string;
  text: string | null;
}

/**
 * An isolated Handlebars: no helper or partial registered by any other code reaches it, and it keeps
 * Handlebars' default refusal of prototype properties (`{{constructor}}` renders nothing).
 */
const handlebars = Handlebars.create();
// A template writes to the message, never to the server's log.
handlebars.unregisterHelper('log');

/**
 * The subject and the text part are plain text: HTML escaping there would show `&amp;` to the reader.
 * The HTML part escapes every `{{value}}`; `{{{value}}}` inserts it as it is, which only a template's
 * author can ask for.
 */
// Only Handlebars' own helpers (if, unless, each, with, lookup): a call of any other is refused when the
// template is saved, instead of failing when a message is sent.
const PLAIN = { noEscape: true, strict: false, knownHelpersOnly: true } as const;
const HTML = { noEscape: false, strict: false, knownHelpersOnly: true } as const;

const reasonOf = (error: unknown) => (error instanceof Error ? error.message.split('\n').filter(Boolean).slice(0, 3).join(' ') : String(error));

/**
 * Compiles and renders each part once without variables, so that a template with a syntax error, an
 * unknown helper or a partial is refused when it is saved rather than when a message is sent. The error
 * names the part and Handlebars' own description of the fault.
 */
export function checkTemplate(template: Partial<MailTemplate>): void {
  for (const part of ['subject', 'html', 'text'] as const) {
    const source = template[part];
    if (source === undefined || source === null) continue;
    try {
      handlebars.compile(source, part === 'html' ? HTML : PLAIN)({});
    } catch (error) {
      throw AppError.validation(`The ${part} is not a valid template: ${reasonOf(error)}`, `body.${part}`);
    }
  }
}

/**
 * Renders the three parts with the same variables. A variable that is not given renders as nothing; a
 * template that still fails with these variables is a validation error naming the fault.
 */
export function renderMail(template: MailTemplate, variables: Record<string, unknown>): RenderedMail {
  const render = (source: string, options: typeof PLAIN | typeof HTML) => {
    try {
      return handlebars.compile(source, options)(variables);
    } catch (error) {
      throw AppError.validation(`The template could not be rendered: ${reasonOf(error)}`);
    }
  };
  return {
    subject: render(template.subject, PLAIN).replace(/\s+/g, ' ').trim(),
    html: render(template.html, HTML),
    text: template.text === null ? null : render(template.text, PLAIN),
  };
}
