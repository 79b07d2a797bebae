import type { Knex } from 'knex';
import { createChargeRepository } from './charges.repository';

export { describeCharge, ledgerOf } from './charges.repository';
export type { ChargeRow } from './charges.repository';
export { createChargeService } from './charges.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type ChargeAccess = Pick<ReturnType<typeof createChargeRepository>, 'anyFor' | 'anyUsageOf' | 'firstChargedFrom' | 'lastChargedDay' | 'forgetInvoice' | 'of' | 'ofInvoice' | 'record' | 'setTaxes'>;
export const chargesIn = (db: Knex): ChargeAccess => createChargeRepository(db);
