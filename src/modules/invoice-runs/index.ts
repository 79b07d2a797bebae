export { createInvoiceRunControlService } from './invoice-run-control.service';
export type { InvoiceRunControlService } from './invoice-run-control.service';
export { createInvoiceRunService } from './invoice-runs.service';
export type { BeginRunInput, BillContractsInput, InvoiceRunPaging } from './invoice-runs.service';
export { runSchema } from './invoice-runs.schemas';
export type { InvoiceRun } from './invoice-runs.schemas';
export { periodToDateUsage } from './period-usage';
export type { PeriodToDateUsage, PlanPeriodUsage, PeriodUsageLine } from './period-usage';
