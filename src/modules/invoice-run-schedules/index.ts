export { createInvoiceRunScheduleService, type InvoiceRunScheduleService } from './invoice-run-schedules.service';
