import fc from 'fast-check';
import { INVOICE_STATES, allowedActions, planAction, targetOf, type InvoiceState } from '../../src/domain/invoice-state';

describe('invoice lifecycle rules', () => {
  it('when an invoice is draft, then raise takes one step to raised', () => {
    expect(planAction('draft', 'raise')).toEqual({ ok: true, steps: ['raise'] });
  });

  it('when markPaid is asked of a draft, then the missing steps run first', () => {
    expect(planAction('draft', 'markPaid')).toEqual({ ok: true, steps: ['raise', 'send', 'pay'] });
    expect(planAction('raised', 'markPaid')).toEqual({ ok: true, steps: ['send', 'pay'] });
    expect(planAction('sent', 'markPaid')).toEqual({ ok: true, steps: ['pay'] });
  });

  it('when an invoice is cancelled, then nothing but undo is allowed', () => {
    for (const action of ['raise', 'send', 'markPaid', 'cancel'] as const) expect(planAction('cancelled', action).ok).toBe(false);
    expect(allowedActions('cancelled', 1)).toEqual(['undo']);
  });

  it('when an invoice is paid, then it can only be cancelled or undone', () => {
    expect(allowedActions('paid', 3)).toEqual(['cancel', 'undo']);
  });

  it('when nothing has happened yet, then undo is not offered', () => {
    expect(allowedActions('draft', 0)).toEqual(['raise', 'markPaid', 'cancel']);
  });

  it('when any plan is followed step by step, then it ends in the target state of its last step', () => {
    const order: InvoiceState[] = ['draft', 'raised', 'sent', 'paid'];
    fc.assert(
      fc.property(fc.constantFrom(...INVOICE_STATES), fc.constantFrom('raise', 'send', 'markPaid', 'cancel' as const), (state, action) => {
        const plan = planAction(state, action);
        if (!plan.ok) return;
        let current = state;
        for (const step of plan.steps) {
          const next = targetOf(step);
          // Forward steps advance exactly one place; cancel may come from anywhere.
          if (step !== 'cancel') expect(order.indexOf(next)).toBe(order.indexOf(current) + 1);
          current = next;
        }
        expect(current).toBe(action === 'cancel' ? 'cancelled' : action === 'markPaid' ? 'paid' : targetOf(plan.steps[0]!));
      }),
    );
  });
});
