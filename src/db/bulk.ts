import type { Knex } from 'knex';

/** A column of a bulk insert: its name and the Postgres type its values are cast to. */
export type BulkColumn<Row> = readonly [column: keyof Row & string, type: 'text' | 'date' | 'timestamptz' | 'numeric' | 'jsonb' | 'boolean' | 'integer'];

export interface BulkInsertOptions {
  /** The conflict clause, as written after `ON CONFLICT`, e.g. `(a, b) DO NOTHING`. */
  onConflict?: string;
  /** Columns to return, e.g. `1` to count the rows inserted. */
  returning?: string;
}

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;

/**
 * Inserts many rows in one statement whose rows arrive as one JSON document
 * (`INSERT … SELECT … FROM json_to_recordset($1) AS r(a text, b date, …)`): the statement stays the same
 * size whatever the number of rows, and the rows are serialised by `JSON.stringify`, natively, instead of
 * one bind parameter at a time. A `jsonb` column takes the value itself (an object or array), not its
 * text. Columns left out take their defaults. Only a repository calls it, for the table it owns.
 */
export async function bulkInsert<Row extends Record<string, unknown>>(
  db: Knex,
  table: string,
  columns: ReadonlyArray<BulkColumn<Row>>,
  rows: readonly Row[],
  options: BulkInsertOptions = {},
): Promise<unknown[]> {
  if (rows.length === 0) return [];
  const names = columns.map(([column]) => quote(column)).join(', ');
  const record = columns.map(([column, type]) => `${quote(column)} ${type}`).join(', ');
  const sql = [
    `INSERT INTO ${quote(table)} (${names}) SELECT ${names} FROM json_to_recordset(?::json) AS r(${record})`,
    options.onConflict ? `ON CONFLICT ${options.onConflict}` : '',
    options.returning ? `RETURNING ${options.returning}` : '',
  ].join(' ');
  const document = JSON.stringify(rows.map((row) => Object.fromEntries(columns.map(([column]) => [column, row[column] ?? null]))));
  const result = await db.raw<{ rows: unknown[] }>(sql, [document]);
  return result.rows;
}
