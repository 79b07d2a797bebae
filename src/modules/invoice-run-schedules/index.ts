export { createInvoiceRunScheduleService } from './invoice-run-schedules.service';
