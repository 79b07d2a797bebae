import type { Knex } from 'knex';
import { createSkuRepository } from './catalog.repository';

export { createCatalogService } from './catalog.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type SkuAccess = Pick<ReturnType<typeof createSkuRepository>, 'findById'>;
export const skusIn = (db: Knex): SkuAccess => createSkuRepository(db);
