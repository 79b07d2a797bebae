import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { CreateCustomerBody, UpdateCustomerBody } from './customers.schemas';

export const CUSTOMER_EXTERNAL_ID_UNIQUE = 'customers_external_id_unique';

export interface CustomerRow {
  id: string;
  organisation_id: string;
  name: string;
  email: string | null;
  currency: string | null;
  external_id: string | null;
  /** Days from an invoice's date to its due date; null: the organisation's terms apply. */
  payment_terms_days: number | null;
  /** BCP 47: how the customer's documents write numbers and dates; null: the organisation's locale. */
  locale: string | null;
  /** IANA time zone of the customer's dates; null: the organisation's. */
  timezone: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface Customer {
  id: string;
  name: string;
  email: string | null;
  currency: string | null;
  externalId: string | null;
  paymentTermsDays: number | null;
  locale: string | null;
  timezone: string | null;
  createdAt: string;
  updatedAt: string;
}

export function toCustomer(row: CustomerRow): Customer {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    currency: row.currency,
    externalId: row.external_id,
    paymentTermsDays: row.payment_terms_days,
    locale: row.locale,
    timezone: row.timezone,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Soft-deleted customers are kept for history but no read ever returns them. */
export function createCustomerRepository(db: Knex) {
  const live = (organisationId: string) => db<CustomerRow>('customers').where({ organisation_id: organisationId }).whereNull('deleted_at');

  return {
    async create(organisationId: string, input: CreateCustomerBody): Promise<CustomerRow> {
      const [row] = await db<CustomerRow>('customers')
        .insert({
          id: newId('cus'),
          organisation_id: organisationId,
          name: input.name,
          email: input.email ?? null,
          currency: input.currency ?? null,
          external_id: input.externalId ?? null,
          payment_terms_days: input.paymentTermsDays ?? null,
          locale: input.locale ?? null,
          timezone: input.timezone ?? null,
        })
        .returning('*');
      return row!;
    },

    /** Sets the fields given (null clears one); undefined when no live customer has the id. */
    async update(organisationId: string, id: string, input: UpdateCustomerBody): Promise<CustomerRow | undefined> {
      const columns = {
        name: input.name,
        email: input.email,
        external_id: input.externalId,
        payment_terms_days: input.paymentTermsDays,
        locale: input.locale,
        timezone: input.timezone,
      };
      const changes = Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined));
      const [row] = await live(organisationId)
        .where({ id })
        .update({ ...changes, updated_at: db.fn.now() })
        .returning('*');
      return row;
    },

    /** The ids of live customers, as a subquery for the tables that hang off a customer. */
    liveIds(): Knex.QueryBuilder {
      return db('customers').select('id').whereNull('deleted_at');
    },

    async findById(organisationId: string, id: string): Promise<CustomerRow | undefined> {
      return live(organisationId).where({ id }).first();
    },

    /** Deleted ones too: an invoice keeps naming its customer. */
    async findAnyById(organisationId: string, id: string): Promise<CustomerRow | undefined> {
      return db<CustomerRow>('customers').where({ organisation_id: organisationId, id }).first();
    },

    /**
     * Inside a transaction: holds the customer row until commit, so a concurrent delete waits and then
     * sees whatever is being attached to the customer.
     */
    async lockLive(organisationId: string, id: string): Promise<boolean> {
      return Boolean(await live(organisationId).where({ id }).forShare().first('id'));
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<Customer>> {
      return paginate<CustomerRow, Customer>(live(organisationId).select('*'), paging, {
        searchColumns: ['name', 'email', 'external_id'],
        map: toCustomer,
      });
    },

    async softDelete(organisationId: string, id: string): Promise<boolean> {
      const deleted = await live(organisationId).where({ id }).update({ deleted_at: db.fn.now(), updated_at: db.fn.now() });
      return deleted > 0;
    },
  };
}

export type CustomerRepository = ReturnType<typeof createCustomerRepository>;
