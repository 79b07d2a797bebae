import type { Knex } from 'knex';
import { createCreditRepository } from './credits.repository';

export { createCreditGrantService, createCreditService } from './credits.service';
export type { ExpireLotInput } from './credits.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type CreditAccess = Pick<ReturnType<typeof createCreditRepository>, 'append' | 'balances' | 'consume' | 'giveBack'>;
export const creditsIn = (db: Knex): CreditAccess => createCreditRepository(db);
