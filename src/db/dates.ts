/** Postgres DATE columns arrive as local-midnight Dates; read back the calendar day they name. */
export function calendarDay(value: Date | string): string {
  if (typeof value === 'string') return value.slice(0, 10);
  const pad = (n: number) => String(n).padStart(2, '0');
  // Four digits always: the year 1 is 0001, as a DATE column and the API's YYYY-MM-DD write it.
  return `${String(value.getFullYear()).padStart(4, '0')}-${pad(value.getMonth() + 1)}-${pad(value.getDate())}`;
}
