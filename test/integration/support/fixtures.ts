import { newId } from '../../../src/db/ids';
import type { Tenant, TestApi } from './harness';

/** A customer with one customer entity, written straight to the tables (the usage tests' only precondition). */
export async function createCustomerEntity(api: TestApi, tenant: Tenant): Promise<{ customerId: string; entityId: string }> {
  const customerId = newId('cus');
  const entityId = newId('ent');
  await api.db('customers').insert({ id: customerId, organisation_id: tenant.organisationId, name: `Customer ${customerId}` });
  await api.db('entities').insert({ id: entityId, organisation_id: tenant.organisationId, type: 'customer', name: 'Entity', customer_id: customerId });
  return { customerId, entityId };
}

export interface EventOptions {
  eventId?: string;
  value?: number | string;
  timestamp?: string;
  metric?: string;
  metadata?: Record<string, unknown>;
}

export function usageEvent(entityId: string, options: EventOptions = {}): Record<string, unknown> {
  return {
    CustomerEntityId: entityId,
    metric: options.metric ?? 'api_calls',
    value: options.value ?? 1,
    timestamp: options.timestamp ?? '2026-11-01T10:00:00Z',
    ...(options.eventId ? { eventId: options.eventId } : {}),
    ...(options.metadata ? { metadata: options.metadata } : {}),
  };
}
