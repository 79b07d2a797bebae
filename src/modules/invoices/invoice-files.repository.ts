import type { Knex } from 'knex';

export interface InvoiceFileRow {
  id: string;
  organisation_id: string;
  invoice_id: string;
  filename: string;
  content_type: string;
  /** BIGINT: the driver returns it as text. */
  size: string;
  sha256: string;
  storage_key: string;
  uploaded_by: string | null;
  created_at: Date;
}

export type NewInvoiceFile = Omit<InvoiceFileRow, 'size' | 'created_at'> & { size: number };

/** The documents uploaded to invoices; their content lives in file storage under `storage_key`. */
export function createInvoiceFileRepository(db: Knex) {
  return {
    async insert(file: NewInvoiceFile): Promise<InvoiceFileRow> {
      const [row] = await db('invoice_files').insert(file).returning<InvoiceFileRow[]>('*');
      return row!;
    },

    async list(organisationId: string, invoiceId: string): Promise<InvoiceFileRow[]> {
      return db('invoice_files').where({ organisation_id: organisationId, invoice_id: invoiceId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
    },

    async find(organisationId: string, invoiceId: string, id: string): Promise<InvoiceFileRow | undefined> {
      return db('invoice_files').where({ organisation_id: organisationId, invoice_id: invoiceId, id }).first<InvoiceFileRow | undefined>();
    },

    async delete(id: string): Promise<void> {
      await db('invoice_files').where({ id }).delete();
    },
  };
}
