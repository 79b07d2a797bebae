export { createContractLifecycleService } from './contract-lifecycle.service';
export type { AchieveMilestoneInput, SetContractStatusInput } from './contract-lifecycle.service';
export { createCreditNoteLifecycleService } from './credit-note-lifecycle.service';
export type { CreditNoteStepInput } from './credit-note-lifecycle.service';
export { createInvoiceLifecycleService } from './invoice-lifecycle.service';
export { createPlanChangeLifecycleService } from './plan-change-lifecycle.service';
export type { ChangePlanInput, UndoPlanChangeInput } from './plan-change-lifecycle.service';
