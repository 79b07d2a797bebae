export const invoiceWorkflowId = (invoiceId: string) => `invoice:${invoiceId}`;
