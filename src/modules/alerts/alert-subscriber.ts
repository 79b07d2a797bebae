import type { EventSubscriber } from '../../events/relay';
import type { AlertService } from './alerts.service';

/**
 * Alerts as a subscriber of the domain events (src/events/relay.ts): each batch is evaluated in the relay's
 * transaction, so the triggers and their `alert.triggered` events commit with the batch being marked handed
 * on, or not at all. Repeating a batch finds the triggers recorded and records nothing twice.
 */
export function alertSubscriber(alerts: Pick<AlertService, 'evaluateEvents'>): EventSubscriber {
  return { name: 'alerts', handle: (trx, events) => alerts.evaluateEvents(trx, events) };
}
