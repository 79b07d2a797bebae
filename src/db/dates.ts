/** Postgres DATE columns arrive as local-midnight Dates; read back the calendar day they name. */
export function calendarDay(value: Date | string): string {
  if (typeof value === 'string') return value.slice(0, 10);
  const pad = (n: number) => String(n).padStart(2, '0');
  // Four digits always: the year 1 is 0001, as a DATE column and the API's YYYY-MM-DD write it.
  return `${String(value.getFullYear()).padStart(4, '0')}-${pad(value.getMonth() + 1)}-${pad(value.getDate())}`;
}

/**
 * An instant as Postgres reads it. `toISOString` writes a year past 9999 with a sign and six digits
 * (`+010000-01-01T…`), which Postgres takes for a zone offset and refuses: the end of the last day or
 * quarter hour of the year 9999 is such an instant. Postgres reads the year written plainly.
 */
export function sqlInstant(at: Date): string {
  const iso = at.toISOString();
  return iso.startsWith('+') ? iso.slice(1).replace(/^0+(?=\d{5})/, '') : iso;
}
