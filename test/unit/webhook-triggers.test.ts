import { TRIGGER_RULES, TRIGGERABLE_EVENT_TYPES, triggerRefusal, type TriggerFacts, type TriggeredObjectEventType } from '../../src/modules/webhooks/triggers';

describe('triggered events', () => {
  const invoice = (status: string, reminded = false): TriggerFacts => ({ kind: 'invoice', status, reminded });
  const contract = (status: string, resumedOnce = false): TriggerFacts => ({ kind: 'contract', status, resumedOnce });
  const run = (status: string): TriggerFacts => ({ kind: 'invoice_run', status });
  const note = (status: string): TriggerFacts => ({ kind: 'credit_note', status });
  const batch = (status: string): TriggerFacts => ({ kind: 'usage_batch', status });
  const payment = (recordedBy: 'api' | 'invoice' | 'refund'): TriggerFacts => ({ kind: 'payment', recordedBy, invoiceId: 'inv_1', creditNoteId: recordedBy === 'refund' ? 'crn_1' : null });

  // Each type: an object in its state, and one that is not, with the refusal naming the actual state.
  const cases: Array<[TriggeredObjectEventType, TriggerFacts, TriggerFacts, string]> = [
    ['invoice.created', invoice('draft'), invoice('raised'), 'the invoice is raised, not draft; invoice.created cannot be triggered for it'],
    ['invoice.raised', invoice('raised'), invoice('sent'), 'the invoice is sent, not raised; invoice.raised cannot be triggered for it'],
    ['invoice.sent', invoice('sent'), invoice('paid'), 'the invoice is paid, not sent; invoice.sent cannot be triggered for it'],
    ['invoice.paid', invoice('paid'), invoice('raised'), 'the invoice is raised, not paid; invoice.paid cannot be triggered for it'],
    ['invoice.cancelled', invoice('cancelled'), invoice('draft'), 'the invoice is draft, not cancelled; invoice.cancelled cannot be triggered for it'],
    ['invoice.overdue', invoice('sent', true), invoice('sent'), 'the invoice is sent with no reminder sent, not overdue (raised or sent, with a reminder sent); invoice.overdue cannot be triggered for it'],
    ['invoice_run.completed', run('completed'), run('running'), 'the invoice run is running, not completed; invoice_run.completed cannot be triggered for it'],
    ['invoice_run.failed', run('failed'), run('completed'), 'the invoice run is completed, not failed; invoice_run.failed cannot be triggered for it'],
    ['contract.activated', contract('active'), contract('draft'), 'the contract is draft, not active; contract.activated cannot be triggered for it'],
    ['contract.suspended', contract('suspended'), contract('active'), 'the contract is active, not suspended; contract.suspended cannot be triggered for it'],
    ['contract.resumed', contract('active', true), contract('active'), 'the contract is active and was never suspended, not active after a suspension; contract.resumed cannot be triggered for it'],
    ['contract.ended', contract('ended'), contract('suspended'), 'the contract is suspended, not ended; contract.ended cannot be triggered for it'],
    ['contract.terminated', contract('terminated'), contract('active'), 'the contract is active, not terminated; contract.terminated cannot be triggered for it'],
    ['payment.created', payment('api'), payment('refund'), 'the payment is the refund of credit note crn_1, not one recorded through POST /payments; payment.created cannot be triggered for it'],
    ['credit_note.issued', note('issued'), note('draft'), 'the credit note is draft, not issued; credit_note.issued cannot be triggered for it'],
    ['credit_note.voided', note('voided'), note('issued'), 'the credit note is issued, not voided; credit_note.voided cannot be triggered for it'],
    ['usage.batch_processed', batch('completed'), batch('processing'), 'the usage batch is processing, not completed; usage.batch_processed cannot be triggered for it'],
  ];

  it('when the trigger accepts a type, then a rule names the state its object must be in', () => {
    expect(cases.map(([type]) => type).sort()).toEqual(Object.keys(TRIGGER_RULES).sort());
    expect(TRIGGERABLE_EVENT_TYPES).toEqual(['webhook.test', ...Object.keys(TRIGGER_RULES)]);
    // Events of a step, not of a state, are not triggered.
    for (const type of ['invoice.transition_undone', 'credit_note.transition_undone', 'contract.plan_changed', 'contract.plan_change_undone', 'milestone.achieved', 'credits.granted', 'credits.expired']) {
      expect(TRIGGERABLE_EVENT_TYPES).not.toContain(type);
    }
  });

  it.each(cases)('when %s is triggered, then it is sent for an object in its state and refused, naming the state, otherwise', (type, holds, fails, message) => {
    expect(triggerRefusal(type, holds)).toBeUndefined();
    expect(triggerRefusal(type, fails)).toBe(message);
  });

  it('when an object has passed through the state the event names, then the event is refused: it names the current state', () => {
    expect(triggerRefusal('invoice.raised', invoice('paid'))).toBe('the invoice is paid, not raised; invoice.raised cannot be triggered for it');
    expect(triggerRefusal('contract.suspended', contract('active', true))).toBe('the contract is active, not suspended; contract.suspended cannot be triggered for it');
    expect(triggerRefusal('invoice.overdue', invoice('paid', true))).toBe('the invoice is paid, not overdue (raised or sent, with a reminder sent); invoice.overdue cannot be triggered for it');
    expect(triggerRefusal('payment.created', payment('invoice'))).toBe('the payment is the one recorded when invoice inv_1 was marked paid, not one recorded through POST /payments; payment.created cannot be triggered for it');
  });
});
