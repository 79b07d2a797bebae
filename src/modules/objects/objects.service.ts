import type { Knex } from 'knex';
import { z } from 'zod';
import { orNotFound } from '../../domain/errors';
import type { Page } from '../../http/paging';
import { objectNamed, toObjectRecord } from './object-registry';
import type { ObjectQuery } from './object-sql';
import { createObjectRepository } from './objects.repository';

export function createObjectService(db: Knex) {
  const objects = createObjectRepository(db);

  return {
    /** An object's fields, their types, which can be queried, its relations and its JSON schema. */
    schema(objectName: string) {
      const descriptor = orNotFound(objectNamed(objectName), 'Object');
      const { $schema: _ignored, ...jsonSchema } = z.toJSONSchema(descriptor.schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
      return {
        object: objectName,
        queryableFields: Object.entries(descriptor.fields).map(([name, field]) => ({ name, type: field.type })),
        relations: descriptor.relations,
        jsonSchema,
      };
    },

    async query(organisationId: string, body: ObjectQuery & { object: string; page: number; limit: number }): Promise<Page<Record<string, unknown>>> {
      const descriptor = objectNamed(body.object)!;
      const { rows, total } = await objects.page(descriptor, organisationId, body, body);
      return { items: rows.map((row) => toObjectRecord(descriptor, row)), page: body.page, limit: body.limit, total };
    },
  };
}

export type ObjectService = ReturnType<typeof createObjectService>;
