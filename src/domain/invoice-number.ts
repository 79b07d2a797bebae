/**
 * Invoice number templates: `{number}` (required), `{number:N}` zero-padded to N digits, `{year}` (the
 * invoice date's year). E.g. "INV-{year}-{number:6}" → "INV-2026-000042".
 */

const PLACEHOLDER = /\{(number|year)(?::(\d{1,2}))?\}/g;

export function isValidInvoiceNumberFormat(template: string): boolean {
  const stripped = template.replace(PLACEHOLDER, '');
  return /\{number(:\d{1,2})?\}/.test(template) && !/[{}]/.test(stripped) && template.length <= 64;
}

export function formatInvoiceNumber(template: string, sequence: number, invoiceDate: string): string {
  return template.replace(PLACEHOLDER, (_match, name: string, width?: string) =>
    name === 'year' ? invoiceDate.slice(0, 4) : String(sequence).padStart(width ? Number(width) : 0, '0'),
  );
}
