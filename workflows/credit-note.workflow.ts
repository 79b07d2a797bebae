import { condition, log, setHandler, uuid4 } from '@temporalio/workflow';
import { issueCreditNoteUpdate, undoCreditNoteUpdate, voidCreditNoteUpdate, type CreditNoteActivities, type CreditNoteStepInput, type CreditNoteWorkflowInput } from './credit-note.types';
import { activitiesOf, idle, localActivitiesOf, Mutex } from './shared';

/** A credit note's steps, like an invoice's: short transactions inside the workflow task that received the Update. */
const creditNoteStepLocalActivities = localActivitiesOf<Omit<CreditNoteActivities, 'mailCreditNote'>>('invoiceStep');
const creditNoteMailActivities = activitiesOf<Pick<CreditNoteActivities, 'mailCreditNote'>>('emailSend');

/** A credit note's workflow completes after this long with nothing to do; the next step starts a new run. */
const QUIET = '1 hour';

/**
 * One workflow per credit note runs its steps one after another. The state lives in Postgres: each step
 * is one transaction that checks where the note stands, so the workflow keeps no memory to lose and a new
 * run (after a quiet hour, a reset, a termination) carries on from the database. Once issued, the note is
 * e-mailed to the customer, beside any later step.
 */
export async function creditNoteWorkflow(input: CreditNoteWorkflowInput): Promise<void> {
  const lock = new Mutex();
  // Each step carries an id of its own, the same on every retry, so that a step that committed is not run twice.
  const run = (work: (step: CreditNoteStepInput) => Promise<void>) => lock.runExclusive(() => work({ ...input, stepId: uuid4() }));
  let mailDue = false;
  setHandler(issueCreditNoteUpdate, async () => {
    await run(creditNoteStepLocalActivities.issueCreditNote);
    mailDue = true;
  });
  setHandler(voidCreditNoteUpdate, () => run(creditNoteStepLocalActivities.voidCreditNote));
  setHandler(undoCreditNoteUpdate, () => run(creditNoteStepLocalActivities.undoCreditNote));
  for (;;) {
    const busy = await condition(() => mailDue || !idle(lock), QUIET);
    if (!busy) return;
    if (mailDue) {
      mailDue = false;
      // The credit note stands whether or not its e-mail gets through; every attempt is bounded.
      await creditNoteMailActivities.mailCreditNote(input).catch((error: unknown) => log.warn('a credit note could not be e-mailed', { creditNoteId: input.creditNoteId, error: String(error) }));
    }
    await condition(() => idle(lock));
  }
}
