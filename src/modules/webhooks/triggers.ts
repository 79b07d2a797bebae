import { InvariantError } from '../../domain/errors';

/**
 * What `POST /webhooks/trigger` may send. A triggered event carries an object's current state, so it is
 * sent only while the object is in the state its type names: `invoice.paid` for a paid invoice, never for
 * a raised one. Events that report a step rather than a state (an undo, a plan change, a grant) are not
 * triggered at all: their original delivery can be redelivered, with its own `webhook-id`.
 */

/** How long a trigger of the same type for the same object answers the first one's event instead of a new one. */
export const TRIGGER_REPEAT_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The data of a triggered `webhook.test`. */
export const TEST_EVENT_DATA = { test: true, message: 'A test event sent by POST /webhooks/trigger' } as const;

/** What the rules need to know of an object, beside the data the event carries. */
export type TriggerFacts =
  | { kind: 'invoice'; status: string; reminded: boolean }
  | { kind: 'invoice_run'; status: string }
  | { kind: 'contract'; status: string; resumedOnce: boolean }
  | { kind: 'payment'; recordedBy: 'api' | 'invoice' | 'refund'; invoiceId: string | null; creditNoteId: string | null }
  | { kind: 'credit_note'; status: string }
  | { kind: 'usage_batch'; status: string };

export type TriggerKind = TriggerFacts['kind'];

/** An object as a triggered event carries it (as the API shows it), with its facts. */
export interface TriggerSubject {
  data: unknown;
  facts: TriggerFacts;
}

interface TriggerRule<K extends TriggerKind = TriggerKind> {
  kind: K;
  /** The state the event names, in words. */
  needs: string;
  holds: (facts: Extract<TriggerFacts, { kind: K }>) => boolean;
  /** The object's actual state, in words. */
  actual: (facts: Extract<TriggerFacts, { kind: K }>) => string;
}

const statusIs = <K extends Exclude<TriggerKind, 'payment'>>(kind: K, status: string): TriggerRule<K> => ({
  kind,
  needs: status,
  holds: (facts) => (facts as { status: string }).status === status,
  actual: (facts) => (facts as { status: string }).status,
});

const owed = (status: string) => status === 'raised' || status === 'sent';

/**
 * Every event type the trigger sends with an object, and the state the object must be in now: the one
 * the event names (its current status equals it), not one it has passed through.
 */
export const TRIGGER_RULES = {
  'invoice.created': statusIs('invoice', 'draft'),
  'invoice.raised': statusIs('invoice', 'raised'),
  'invoice.sent': statusIs('invoice', 'sent'),
  'invoice.paid': statusIs('invoice', 'paid'),
  'invoice.cancelled': statusIs('invoice', 'cancelled'),
  'invoice.overdue': {
    kind: 'invoice',
    needs: 'overdue (raised or sent, with a reminder sent)',
    holds: (facts) => owed(facts.status) && facts.reminded,
    actual: (facts) => (owed(facts.status) ? `${facts.status} with no reminder sent` : facts.status),
  } satisfies TriggerRule<'invoice'>,
  'invoice_run.completed': statusIs('invoice_run', 'completed'),
  'invoice_run.failed': statusIs('invoice_run', 'failed'),
  'contract.activated': statusIs('contract', 'active'),
  'contract.suspended': statusIs('contract', 'suspended'),
  'contract.resumed': {
    kind: 'contract',
    needs: 'active after a suspension',
    holds: (facts) => facts.status === 'active' && facts.resumedOnce,
    actual: (facts) => (facts.status === 'active' ? 'active and was never suspended' : facts.status),
  } satisfies TriggerRule<'contract'>,
  'contract.ended': statusIs('contract', 'ended'),
  'contract.terminated': statusIs('contract', 'terminated'),
  'payment.created': {
    kind: 'payment',
    needs: 'one recorded through POST /payments',
    holds: (facts) => facts.recordedBy === 'api',
    actual: (facts) => (facts.recordedBy === 'refund' ? `the refund of credit note ${facts.creditNoteId}` : `the one recorded when invoice ${facts.invoiceId} was marked paid`),
  } satisfies TriggerRule<'payment'>,
  'credit_note.issued': statusIs('credit_note', 'issued'),
  'credit_note.voided': statusIs('credit_note', 'voided'),
  'usage.batch_processed': statusIs('usage_batch', 'completed'),
} as const;

export type TriggeredObjectEventType = keyof typeof TRIGGER_RULES;

/** The types the trigger accepts: `webhook.test` (no object) and those of the rules (an object each). */
export const TRIGGERABLE_EVENT_TYPES = ['webhook.test', ...(Object.keys(TRIGGER_RULES) as TriggeredObjectEventType[])] as [
  'webhook.test',
  ...TriggeredObjectEventType[],
];
export type TriggerableEventType = (typeof TRIGGERABLE_EVENT_TYPES)[number];

const NOUNS: Record<TriggerKind, string> = {
  invoice: 'invoice',
  invoice_run: 'invoice run',
  contract: 'contract',
  payment: 'payment',
  credit_note: 'credit note',
  usage_batch: 'usage batch',
};

export function ruleOf(type: TriggeredObjectEventType): TriggerRule {
  return TRIGGER_RULES[type] as unknown as TriggerRule;
}

export function nounOf(type: TriggeredObjectEventType): string {
  return NOUNS[ruleOf(type).kind];
}

/** Why `type` may not be sent for the object now, naming its actual state; undefined when it may. */
export function triggerRefusal(type: TriggeredObjectEventType, facts: TriggerFacts): string | undefined {
  const rule = ruleOf(type);
  if (facts.kind !== rule.kind) throw new InvariantError(`${type} is about a ${NOUNS[rule.kind]}, not a ${NOUNS[facts.kind]}`);
  if (rule.holds(facts)) return undefined;
  return `the ${NOUNS[rule.kind]} is ${rule.actual(facts)}, not ${rule.needs}; ${type} cannot be triggered for it`;
}
