/**
 * Named actions `Service:method`, as the interface contract names them. A role is a set of actions;
 * Admin holds all of them, SystemUser the contract's permission table minus its prohibition list.
 */
const SYSTEM_USER_ACTIONS = [
  // Customers: create, read (delete is admin only)
  'CustomerService:createCustomer',
  'CustomerService:getCustomers',
  'CustomerService:getCustomerById',
  // Entities: create, read by type or identifier, delete
  'EntityService:createEntity',
  'EntityService:getEntityById',
  'EntityService:getEntitiesByType',
  'EntityService:getEntityByIdentifier',
  'EntityService:deleteEntity',
  // Addresses: create, delete
  'AddressService:createAddress',
  'AddressService:deleteAddress',
  // Contact groups: the contract's endpoint grants delete; invoices go to these groups, so integrators
  // also create and read them.
  'ContactGroupService:createContactGroup',
  'ContactGroupService:getContactGroups',
  'ContactGroupService:getContactGroupById',
  'ContactGroupService:deleteContactGroup',
  // Catalog: read SKU groups, read and create SKUs; SKU attributes
  'SkuGroupService:getSkuGroups',
  'SkuService:getSkus',
  'SkuService:getSkuById',
  'SkuService:createSku',
  // Billing plans: read plan by id, delete plan items
  'BillingPlanService:getPlanById',
  'BillingPlanService:deletePlanItem',
  // Contracts: create, read, update; plan item milestones
  'ContractService:createContract',
  'ContractService:getContracts',
  'ContractService:getContractById',
  'ContractService:updateContract',
  'ContractService:createContractPlanItemMilestone',
  'ContractService:deleteContractPlanItemMilestone',
  'ContractService:getContractTaxes',
  'ContractService:createContractTax',
  // Invoices
  'InvoiceService:createInvoice',
  'InvoiceService:getInvoices',
  'InvoiceService:getInvoiceById',
  'InvoiceService:raiseInvoice',
  'InvoiceService:sendInvoice',
  'InvoiceService:markInvoicePaid',
  'InvoiceService:generateInvoicePdf',
  'InvoiceService:syncInvoiceItems',
  'InvoiceService:uploadInvoiceDocument',
  'InvoiceService:getInvoiceFiles',
  // Invoice items (delete only while draft)
  'InvoiceItemService:createInvoiceItem',
  'InvoiceItemService:getInvoiceItems',
  'InvoiceItemService:deleteInvoiceItem',
  // Invoice runs: triggering invoicing is part of the role; schedules are not
  'InvoiceRunService:createInvoiceRun',
  'InvoiceRunService:getInvoiceRuns',
  // Entitlements: SystemUser reads features, entitles customers to them and grants beyond limits; what a
  // feature is and counts is Admin's
  'FeatureService:getFeatures',
  'EntitlementService:manageEntitlements',
  'EntitlementService:getEntitlements',
  // Coupons: SystemUser reads them and applies them to contracts; managing them is Admin's
  'CouponService:getCoupons',
  'ContractService:applyCoupon',
  // Alerts: SystemUser reads them and their triggers; defining them is Admin's
  'AlertService:getAlerts',
  // Plan changes (and their undo, until an invoice credits them)
  'ContractService:changePlan',
  // Credit notes and customer credit (voiding and undoing a credit note are Admin's)
  'CreditNoteService:createCreditNote',
  'CreditNoteService:getCreditNotes',
  'CreditService:getCredits',
  'CreditService:addCredits',
  // Payments
  'PaymentService:createPayment',
  'PaymentService:getPayments',
  'PaymentService:updatePayment',
  'PaymentService:deletePayment',
  // Revenue
  'RevenueService:createRevenue',
  'RevenueService:getRevenue',
  'RevenueService:syncRevenueByInvoiceItem',
  // Usage
  'UsageService:createUsage',
  'UsageService:getUsage',
  'UsageService:updateUsage',
  'UsageService:deleteUsage',
  'UsageService:bulkCreateEvents',
  'UsageService:bulkDeleteEvents',
  // Meters: read, create usage by meter, sync all
  'MeterService:getMeters',
  'MeterService:createUsageByMeter',
  'MeterService:syncAll',
  // Events: create, read by id
  'EventService:createEvent',
  'EventService:getEventById',
  // Jobs
  'JobService:create',
  'JobService:get',
  'JobService:update',
  'JobService:delete',
  // Apps and credentials: read apps, read and update credentials
  'AppService:getApps',
  'AppService:getCredentials',
  'AppService:updateCredentials',
  // Lifecycle machine
  'FsmService:getStates',
  'FsmService:getActions',
  'FsmService:transition',
  'FsmService:undoTransition',
  'FsmService:createMachine',
  'FsmService:getMachines',
  // Organisation settings and attributes
  'OrganisationSettingService:getSettings',
  'OrganisationSettingService:updateSettings',
  'OrganisationAttributeService:create',
  'OrganisationAttributeService:get',
  'OrganisationAttributeService:update',
  'OrganisationAttributeService:delete',
  // Custom attributes
  'AttributeService:createAttribute',
  'AttributeService:getAttributes',
  'AttributeService:updateAttribute',
  'AttributeService:deleteAttribute',
  'AttributeService:validateAttributes',
  // FX rates
  'FxRateService:createFxRate',
  'FxRateService:getFxRates',
  'FxRateService:updateFxRate',
  // Reference data
  'GeographyService:getCountries',
  'GeographyService:getStates',
  'CurrencyService:getCurrencies',
  // Integrations
  'WebhookService:trigger',
  'ObjectService:query',
  'ObjectService:export',
  'ChatbotService:sendMessage',
  'EmailService:sendEmail',
  'EmailService:getEmails',
  // Templates: SystemUser reads them; managing them is Admin's
  'EmailTemplateService:getTemplates',
  'InvoiceTemplateService:getTemplates',
  // Payments through a gateway: SystemUser links customers to it and reads the attempts; the gateway's
  // credentials, dunning campaigns and reconciliation are Admin's
  'PaymentProviderService:linkCustomer',
  'PaymentService:getPaymentAttempts',
] as const;

/** Actions only Admin holds: the contract's prohibition list and its admin-only endpoints. */
const ADMIN_ONLY_ACTIONS = [
  'CustomerService:deleteCustomer',
  'CustomerService:updateCustomer',
  'UserService:createSystemUser',
  'AppService:deleteApp',
  'SkuGroupService:createSkuGroup',
  'SkuGroupService:deleteSkuGroup',
  'BillingPlanService:getPlans',
  'BillingPlanService:createPlan',
  'BillingPlanService:updatePlan',
  'BillingPlanService:deletePlan',
  'BillingPlanService:createPlanItem',
  'MeterService:createMeter',
  'MeterService:updateMeter',
  'ContractService:updateContractTax',
  'InvoiceService:deleteInvoiceFile',
  'InvoiceRunScheduleService:manageSchedules',
  'WebhookService:manageEndpoints',
  'EmailTemplateService:manageTemplates',
  'InvoiceTemplateService:manageTemplates',
  'CreditNoteService:voidCreditNote',
  'CouponService:manageCoupons',
  'AlertService:manageAlerts',
  'CreditNoteService:undoCreditNote',
  'FeatureService:manageFeatures',
  'PaymentProviderService:manageProviders',
  'DunningCampaignService:manageCampaigns',
] as const;

export type Action = (typeof SYSTEM_USER_ACTIONS)[number] | (typeof ADMIN_ONLY_ACTIONS)[number];
export type Role = 'Admin' | 'SystemUser';

export const ALL_ACTIONS: readonly Action[] = [...SYSTEM_USER_ACTIONS, ...ADMIN_ONLY_ACTIONS];

const ROLE_ACTIONS: Record<Role, ReadonlySet<Action>> = {
  Admin: new Set(ALL_ACTIONS),
  SystemUser: new Set<Action>(SYSTEM_USER_ACTIONS),
};

export function roleAllows(role: Role, actions: readonly Action[]): boolean {
  const granted = ROLE_ACTIONS[role];
  return actions.every((action) => granted.has(action));
}
