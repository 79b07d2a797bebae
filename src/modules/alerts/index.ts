export { alertSubscriber } from './alert-subscriber';
export type { PeriodSpend } from './alert-evaluation';
export { createAlertService } from './alerts.service';
export type { AlertService } from './alerts.service';
