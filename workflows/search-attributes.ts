import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Operators find workflows in the Temporal UI by these; registered by the worker at start. */
export const OrganisationIdKey = defineSearchAttributeKey('OrganisationId', SearchAttributeType.KEYWORD);
export const CustomerIdKey = defineSearchAttributeKey('CustomerId', SearchAttributeType.KEYWORD);
export const InvoiceNumberKey = defineSearchAttributeKey('InvoiceNumber', SearchAttributeType.KEYWORD);
export const ContractIdKey = defineSearchAttributeKey('ContractId', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [OrganisationIdKey, CustomerIdKey, InvoiceNumberKey, ContractIdKey];
