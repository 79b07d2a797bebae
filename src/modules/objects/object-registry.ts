import { z } from 'zod';
import { calendarDay } from '../../db/dates';
import type { FieldSpec } from '../../domain/object-query';
import { contractSchema } from '../contracts';
import { customerSchema, entitySchema } from '../customers';
import { invoiceSchema } from '../invoices';
import { paymentSchema } from '../payments';
import { usageEventSchema } from '../usage';

export interface ObjectDescriptor {
  table: string;
  /** The resource's own response schema: the same source as the OpenAPI document. */
  schema: z.ZodType;
  /** API field → column: only these can be read, filtered, sorted or exported. */
  fields: Record<string, FieldSpec>;
  relations: Array<{ field: string; object: string }>;
  softDeleted: boolean;
}

const s = (column: string): FieldSpec => ({ column, type: 'string' });
const common = { id: s('id'), createdAt: { column: 'created_at', type: 'datetime' } as FieldSpec };

export const OBJECTS: Record<string, ObjectDescriptor> = {
  customers: {
    table: 'customers',
    schema: customerSchema,
    fields: { ...common, name: s('name'), email: s('email'), currency: s('currency'), externalId: s('external_id') },
    relations: [],
    softDeleted: true,
  },
  entities: {
    table: 'entities',
    schema: entitySchema,
    fields: { ...common, type: s('type'), name: s('name'), customerId: s('customer_id'), identifier: s('identifier'), taxId: s('tax_id'), currency: s('currency') },
    relations: [{ field: 'customerId', object: 'customers' }],
    softDeleted: true,
  },
  'usage-events': {
    table: 'usage_events',
    schema: usageEventSchema,
    fields: {
      ...common,
      CustomerEntityId: s('customer_entity_id'),
      metric: s('metric'),
      value: { column: 'value', type: 'decimal' },
      timestamp: { column: 'timestamp', type: 'datetime' },
      eventId: s('event_id'),
      jobId: s('job_id'),
      batchId: s('batch_id'),
    },
    relations: [{ field: 'CustomerEntityId', object: 'entities' }],
    softDeleted: false,
  },
  contracts: {
    table: 'contracts',
    schema: contractSchema,
    fields: { ...common, customerId: s('customer_id'), name: s('name'), currency: s('currency'), status: s('status'), startDate: { column: 'start_date', type: 'date' }, endDate: { column: 'end_date', type: 'date' } },
    relations: [{ field: 'customerId', object: 'customers' }],
    softDeleted: false,
  },
  invoices: {
    table: 'invoices',
    schema: invoiceSchema,
    fields: {
      ...common,
      number: s('number'),
      status: s('status'),
      currency: s('currency'),
      date: { column: 'date', type: 'date' },
      total: { column: 'total', type: 'decimal' },
      customerId: s('customer_id'),
      contractId: s('contract_id'),
      ContractPlanId: s('contract_plan_id'),
    },
    relations: [
      { field: 'customerId', object: 'customers' },
      { field: 'contractId', object: 'contracts' },
    ],
    softDeleted: true,
  },
  payments: {
    table: 'payments',
    schema: paymentSchema,
    fields: {
      ...common,
      customerId: s('customer_id'),
      invoiceId: s('invoice_id'),
      amount: { column: 'amount', type: 'decimal' },
      currency: s('currency'),
      paidAt: { column: 'paid_at', type: 'datetime' },
      method: s('method'),
      reference: s('reference'),
    },
    relations: [
      { field: 'customerId', object: 'customers' },
      { field: 'invoiceId', object: 'invoices' },
    ],
    softDeleted: true,
  },
};

/** The object of that name, or undefined: own names only, never `constructor` or `__proto__` of the map. */
export function objectNamed(name: string): ObjectDescriptor | undefined {
  return Object.hasOwn(OBJECTS, name) ? OBJECTS[name] : undefined;
}

export const objectName = z.enum(Object.keys(OBJECTS) as [string, ...string[]]);

/** A row as the objects API shows it: the whitelisted fields, dates as ISO strings, decimals as strings. */
export function toObjectRecord(descriptor: ObjectDescriptor, row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(descriptor.fields).map(([name, field]) => {
      const value = row[field.column];
      if (value instanceof Date) return [name, field.type === 'date' ? calendarDay(value) : value.toISOString()];
      return [name, value ?? null];
    }),
  );
}
