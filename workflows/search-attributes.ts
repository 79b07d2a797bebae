import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Operators find workflows in the Temporal UI by these; registered by the worker at start. */
export const OrganisationIdKey = defineSearchAttributeKey('OrganisationId', SearchAttributeType.KEYWORD);
export const CustomerIdKey = defineSearchAttributeKey('CustomerId', SearchAttributeType.KEYWORD);
export const InvoiceNumberKey = defineSearchAttributeKey('InvoiceNumber', SearchAttributeType.KEYWORD);
export const ContractIdKey = defineSearchAttributeKey('ContractId', SearchAttributeType.KEYWORD);
/** What the workflow is about (`invoice`, `webhook-delivery`, `chatbot`, …; see BILLING_KINDS in ids.ts). */
export const BillingKindKey = defineSearchAttributeKey('BillingKind', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [OrganisationIdKey, CustomerIdKey, InvoiceNumberKey, ContractIdKey, BillingKindKey];
