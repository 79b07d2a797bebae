/**
 * The invoice lifecycle (docs/decisions.md), as pure data shared by the workflow, the API and the FSM
 * endpoints: draft → raised → sent → paid; cancelled from any state; paid from draft, raised or sent,
 * running the missing steps first; cancelled is terminal except for undo.
 */
export const INVOICE_STATES = ['draft', 'raised', 'sent', 'paid', 'cancelled'] as const;
export type InvoiceState = (typeof INVOICE_STATES)[number];

export const INVOICE_ACTIONS = ['raise', 'send', 'markPaid', 'cancel', 'undo'] as const;
export type InvoiceAction = (typeof INVOICE_ACTIONS)[number];

/** The single steps; markPaid from draft runs raise, send, then pay. */
export type InvoiceStep = 'raise' | 'send' | 'pay' | 'cancel';

const STEP_TARGET = { raise: 'raised', send: 'sent', pay: 'paid', cancel: 'cancelled' } as const satisfies Record<InvoiceStep, InvoiceState>;

/** Paid or cancelled: nothing is left to do but, for a while, undo. */
export function isSettled(state: InvoiceState): boolean {
  return state === 'paid' || state === 'cancelled';
}

export function targetOf(step: InvoiceStep): (typeof STEP_TARGET)[InvoiceStep] {
  return STEP_TARGET[step];
}

/** The steps an action takes from a state, or a reason it cannot. */
export function planAction(state: InvoiceState, action: Exclude<InvoiceAction, 'undo'>): { ok: true; steps: InvoiceStep[] } | { ok: false; reason: string } {
  if (state === 'cancelled') return { ok: false, reason: 'the invoice is cancelled' };
  switch (action) {
    case 'raise':
      return state === 'draft' ? { ok: true, steps: ['raise'] } : { ok: false, reason: `cannot raise an invoice that is ${state}` };
    case 'send':
      return state === 'raised' ? { ok: true, steps: ['send'] } : { ok: false, reason: `cannot send an invoice that is ${state}` };
    case 'markPaid': {
      const steps: Record<Exclude<InvoiceState, 'cancelled'>, InvoiceStep[]> = {
        draft: ['raise', 'send', 'pay'],
        raised: ['send', 'pay'],
        sent: ['pay'],
        paid: [],
      };
      return state === 'paid' ? { ok: false, reason: 'the invoice is already paid' } : { ok: true, steps: steps[state] };
    }
    case 'cancel':
      return { ok: true, steps: ['cancel'] };
  }
}

/** Actions allowed now; undo is allowed whenever there is a transition to revert. */
export function allowedActions(state: InvoiceState, transitionsRecorded: number): InvoiceAction[] {
  const actions = (['raise', 'send', 'markPaid', 'cancel'] as const).filter((action) => planAction(state, action).ok);
  return transitionsRecorded > 0 ? [...actions, 'undo'] : actions;
}
