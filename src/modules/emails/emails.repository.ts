import type { Knex } from 'knex';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { EmailStatus } from './emails.schemas';

export interface EmailRow {
  id: string;
  organisation_id: string;
  template_id: string | null;
  to: string[];
  subject: string;
  html: string;
  text: string | null;
  invoice_id: string | null;
  status: EmailStatus;
  message_id: string;
  attempts: number;
  error: string | null;
  sent_at: Date | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export type NewEmail = Pick<EmailRow, 'id' | 'organisation_id' | 'template_id' | 'to' | 'subject' | 'html' | 'text' | 'invoice_id' | 'message_id' | 'created_by'>;

/** Messages sent through `POST /emails`. `db` may be a transaction. */
export function createEmailRepository(db: Knex) {
  const emails = (organisationId: string) => db<EmailRow>('emails').where({ organisation_id: organisationId });
  const touch = () => db.fn.now() as unknown as Date;

  return {
    async create(email: NewEmail): Promise<EmailRow> {
      const [row] = await db<EmailRow>('emails')
        .insert({ ...email, to: JSON.stringify(email.to) as unknown as string[] })
        .returning('*');
      return row!;
    },

    async find(organisationId: string, id: string): Promise<EmailRow | undefined> {
      return emails(organisationId).where({ id }).first();
    },

    async list(organisationId: string, filter: { status?: EmailStatus }, paging: PageQuery): Promise<Page<EmailRow>> {
      const query = emails(organisationId).select('*');
      if (filter.status) query.where({ status: filter.status });
      return paginate<EmailRow, EmailRow>(query, paging, { searchColumns: ['subject'], map: (row) => row });
    },

    /** One more attempt is under way. */
    async countAttempt(id: string): Promise<void> {
      await db('emails').where({ id, status: 'queued' }).update({ attempts: db.raw('attempts + 1'), updated_at: touch() });
    },

    /** What the last attempt ran into, while the message is still queued for another. */
    async noteError(id: string, error: string): Promise<void> {
      await db('emails').where({ id, status: 'queued' }).update({ error, updated_at: touch() });
    },

    async markSent(id: string): Promise<void> {
      await db('emails').where({ id, status: 'queued' }).update({ status: 'sent', sent_at: touch(), error: null, updated_at: touch() });
    },

    async markFailed(id: string, error: string): Promise<void> {
      await db('emails').where({ id, status: 'queued' }).update({ status: 'failed', error, updated_at: touch() });
    },

    /** Failed after its last attempt: the fault an attempt noted stays, `fallback` where none did. */
    async markGivenUp(id: string, fallback: string): Promise<void> {
      await db('emails').where({ id, status: 'queued' }).update({ status: 'failed', error: db.raw('coalesce(error, ?)', [fallback]), updated_at: touch() });
    },

    /** A message whose workflow could not be started: there is nothing left that would send it. */
    async delete(organisationId: string, id: string): Promise<void> {
      await emails(organisationId).where({ id }).delete();
    },
  };
}

export type EmailRepository = ReturnType<typeof createEmailRepository>;
