import { randomUUID } from 'node:crypto';
import { newId } from '../../../src/db/ids';
import type { Tenant, TestApi } from './harness';

/** The customers and entities of a model-based test, and a metric of its own. */
export interface ModelWorld {
  metric: string;
  customers: string[];
  entities: string[];
  /** The customer of each entity: entities 0 and 1 are the first customer's, 2 the second's. */
  customerOfEntity: string[];
}

/** Two customers and three entities, written straight into their tables (fast enough for hundreds of runs). */
export async function createModelWorld(api: TestApi, tenant: Tenant, metricPrefix: string): Promise<ModelWorld> {
  const customers = [newId('cus'), newId('cus')];
  const entities = [newId('ent'), newId('ent'), newId('ent')];
  const customerOfEntity = [customers[0]!, customers[0]!, customers[1]!];
  await api.db('customers').insert(customers.map((id) => ({ id, organisation_id: tenant.organisationId, name: `Customer ${id}` })));
  await api.db('entities').insert(entities.map((id, index) => ({ id, organisation_id: tenant.organisationId, type: 'customer', name: 'Entity', customer_id: customerOfEntity[index] })));
  return { metric: `${metricPrefix}_${randomUUID().slice(0, 8)}`, customers, entities, customerOfEntity };
}
