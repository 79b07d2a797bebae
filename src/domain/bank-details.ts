/**
 * Bank identifiers as payment details carry them: the IBAN (ISO 13616) and the BIC (ISO 9362). Both are
 * kept without spaces and in upper case; an IBAN is printed in groups of four.
 */

/** Spaces dropped, letters in upper case: the form an IBAN or BIC is kept in. */
export function compactBankCode(value: string): string {
  return value.replace(/\s+/g, '').toUpperCase();
}

const IBAN_SHAPE = /^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/;

/**
 * An IBAN (compacted first): two letters of country, two check digits and 11 to 30 letters or digits of
 * account, whose check digits hold: moved to the end, with each letter as its number (A = 10 … Z = 35),
 * the whole read as one number leaves 1 when divided by 97.
 */
export function isValidIban(value: string): boolean {
  const iban = compactBankCode(value);
  if (!IBAN_SHAPE.test(iban)) return false;
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const char of rearranged) {
    const digits = /\d/.test(char) ? char : String(char.charCodeAt(0) - 55);
    for (const digit of digits) remainder = (remainder * 10 + Number(digit)) % 97;
  }
  return remainder === 1;
}

/** An IBAN in groups of four, as it is printed: `GB33 BUKB 2020 1555 5555 55`. */
export function printedIban(value: string): string {
  return compactBankCode(value).replace(/(.{4})(?=.)/g, '$1 ');
}

/**
 * A BIC (compacted first): four letters of institution, two of country, two letters or digits of location
 * and, optionally, three of branch: 8 or 11 characters.
 */
export function isValidBic(value: string): boolean {
  return /^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}(?:[A-Z0-9]{3})?$/.test(compactBankCode(value));
}
