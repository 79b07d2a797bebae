import type { Knex } from 'knex';
import { createPaymentRepository } from './payments.repository';

export { paymentSchema } from './payments.schemas';
export { createPaymentService } from './payments.service';
export type { PaymentService } from './payments.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type PaymentAccess = Pick<ReturnType<typeof createPaymentRepository>, 'findById' | 'findOfInvoice' | 'insert' | 'listOfInvoice' | 'refundable' | 'setDeleted'>;
export const paymentsIn = (db: Knex): PaymentAccess => createPaymentRepository(db);
