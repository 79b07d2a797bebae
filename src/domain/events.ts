/**
 * The domain events: every change of state the product announces, a closed list of types with the shape of
 * what each carries (docs/architecture.md, "Domain events"). A change records its events in its own
 * transaction, in the outbox (src/events/outbox.ts); the relay hands them to the subscribers once the change
 * has committed: outbound webhooks, the worker's metrics, and whatever reacts to them next.
 *
 * An event that carries an object carries it as the API shows it at that moment; those representations
 * belong to their modules, so here they are only objects with an id.
 */

/** An object as the API shows it (an invoice, a contract, a payment, ...), at the moment of the change. */
export interface Snapshot {
  readonly id: string;
}

/** Amounts per currency, as decimal strings. */
export interface CurrencyTotal {
  currency: string;
  amount: string;
}

/** A run as `GET /invoice-runs/{id}` answers it, without its invoice list. */
export interface InvoiceRunFinished {
  id: string;
  status: 'completed' | 'failed';
  billingDate: string;
  dryRun: boolean;
  scheduleId: string | null;
  customerReference: string | null;
  purchaseOrderNumber: string | null;
  progress: { contracts: number | null; done: number; failed: number };
  invoicesCreated: number;
  totals: CurrencyTotal[];
  /** The contracts that could not be billed, each with its reason. */
  failures: Array<{ contractId: string; code: string; message: string }>;
  startedAt: string;
  completedAt: string | null;
}

/**
 * A new draft invoice, and why it was made: by an invoice run, a milestone, by hand (`POST /invoices`), or
 * because a contract's usage charges crossed progressive billing thresholds (`threshold`: the highest it
 * bills; `thresholds`: every one it claims, several when one jump crossed them).
 */
export interface InvoiceCreated extends Snapshot {
  reason: 'invoice_run' | 'milestone' | 'manual' | 'progressive_threshold';
  threshold?: string;
  thresholds?: string[];
}

export interface UsageBatchProcessed {
  id: string;
  status: string;
  error: string | null;
  total: number;
  summary: unknown;
  createdAt: string;
  completedAt: string | null;
}

/**
 * What one chunk of a usage batch stored (events already held, refused or repeated are not in it): whose
 * usage grew, of which metrics, between which instants. Alerts, entitlements and progressive billing react
 * to it, set-based, a chunk at a time.
 */
export interface UsageIngested {
  batchId: string;
  chunkIndex: number;
  /** How many events the chunk stored. */
  events: number;
  /** The customers whose entities the stored events name, sorted. */
  customerIds: string[];
  /** The metrics of the stored events, sorted. */
  metrics: string[];
  /** The earliest and latest of the stored events' timestamps. */
  from: string;
  to: string;
}

/** Stored events changed or deleted (`PUT`, `DELETE /usage/{id}`, bulk deletes), in the change's transaction. */
export interface UsageCorrected {
  /** How many events the change edited or deleted. */
  events: number;
  /** The customers whose entities the events named, before and after the change, sorted. */
  customerIds: string[];
  /** The metrics of the events, before and after the change, sorted. */
  metrics: string[];
  /** The earliest and latest of the events' timestamps, before and after the change. */
  from: string;
  to: string;
}

/** A customer entitled to a feature. */
export interface EntitlementCreated {
  entitlementId: string;
  customerId: string;
  featureKey: string;
  type: 'boolean' | 'static' | 'metered';
}

/** A metered entitlement at a moment of its period: whose, of which feature, and where it stands. */
export interface EntitlementPeriodEvent {
  entitlementId: string;
  customerId: string;
  featureKey: string;
  periodStart: string;
  periodEnd: string;
}

/** A metered entitlement whose balance reached zero in a period: its usage then. */
export interface EntitlementExhausted extends EntitlementPeriodEvent {
  usage: string;
  limit: string | null;
  balance: string;
  overage: string;
  isSoftLimit: boolean;
}

/** An entry of a customer's credit balance (a grant, an expiry), with the customer. */
export interface CreditEntryEvent extends Snapshot {
  customerId: string;
}

/** An alert crossed one of its thresholds: once per threshold, per period when it recurs. */
export interface AlertTriggered {
  alertId: string;
  /** The threshold crossed, and the value that crossed it (decimal strings). */
  threshold: string;
  value: string;
  /** The first instant of the period the value was counted in. */
  periodStart: string;
}

export interface MilestoneAchieved {
  contractId: string;
  milestone: Snapshot | undefined;
  invoice: Snapshot | undefined;
}

export interface PlanChangeEvent {
  contract: Snapshot | undefined;
  planChange: Snapshot;
}

/** Each event type and what its `data` holds. */
export interface DomainEventData {
  'invoice.created': InvoiceCreated;
  'invoice.raised': Snapshot;
  'invoice.sent': Snapshot;
  'invoice.paid': Snapshot;
  'invoice.cancelled': Snapshot;
  'invoice.transition_undone': Snapshot;
  'invoice.overdue': Snapshot;
  'invoice_run.completed': InvoiceRunFinished;
  'invoice_run.failed': InvoiceRunFinished;
  'contract.activated': Snapshot;
  'contract.suspended': Snapshot;
  'contract.resumed': Snapshot;
  'contract.ended': Snapshot;
  'contract.terminated': Snapshot;
  'contract.plan_changed': PlanChangeEvent;
  'contract.plan_change_undone': PlanChangeEvent;
  'milestone.achieved': MilestoneAchieved;
  'payment.created': Snapshot;
  /** A payment attempt through a gateway failed (declined, refused): the attempt as the API shows it. */
  'payment.failed': Snapshot;
  'credit_note.issued': Snapshot;
  'credit_note.voided': Snapshot;
  'credit_note.transition_undone': Snapshot;
  'credits.granted': CreditEntryEvent;
  'credits.expired': CreditEntryEvent;
  'usage.batch_processed': UsageBatchProcessed;
  'usage.ingested': UsageIngested;
  'usage.corrected': UsageCorrected;
  'alert.triggered': AlertTriggered;
  'entitlement.created': EntitlementCreated;
  'entitlement.exhausted': EntitlementExhausted;
  'entitlement.reset': EntitlementPeriodEvent;
}

export type DomainEventType = keyof DomainEventData;

/** One event: its type and its data, the pair checked together. */
export type DomainEvent<T extends DomainEventType = DomainEventType> = { [K in T]: { type: K; data: DomainEventData[K] } }[T];

const EVENT_TYPES: { [K in DomainEventType]: true } = {
  'invoice.created': true,
  'invoice.raised': true,
  'invoice.sent': true,
  'invoice.paid': true,
  'invoice.cancelled': true,
  'invoice.transition_undone': true,
  'invoice.overdue': true,
  'invoice_run.completed': true,
  'invoice_run.failed': true,
  'contract.activated': true,
  'contract.suspended': true,
  'contract.resumed': true,
  'contract.ended': true,
  'contract.terminated': true,
  'contract.plan_changed': true,
  'contract.plan_change_undone': true,
  'milestone.achieved': true,
  'payment.created': true,
  'payment.failed': true,
  'credit_note.issued': true,
  'credit_note.voided': true,
  'credit_note.transition_undone': true,
  'credits.granted': true,
  'credits.expired': true,
  'usage.batch_processed': true,
  'usage.ingested': true,
  'usage.corrected': true,
  'alert.triggered': true,
  'entitlement.created': true,
  'entitlement.exhausted': true,
  'entitlement.reset': true,
};

/** Every domain event type, in the order the documentation lists them. */
export const DOMAIN_EVENT_TYPES = Object.keys(EVENT_TYPES) as DomainEventType[];

export function isDomainEventType(type: string): type is DomainEventType {
  return Object.hasOwn(EVENT_TYPES, type);
}

/** An event of `type`: the type checks the data against it. */
export function domainEvent<T extends DomainEventType>(type: T, data: DomainEventData[T]): DomainEvent<T> {
  return { type, data } as DomainEvent<T>;
}
