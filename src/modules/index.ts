import type { AppDeps } from '../deps';
import type { Route } from '../http/route';
import { appRoutes } from './auth/apps.routes';
import { addressRoutes } from './customers/addresses.routes';
import { authRoutes } from './auth/auth.routes';
import { contactGroupRoutes } from './contact-groups/contact-groups.routes';
import { customerRoutes } from './customers/customers.routes';
import { entityRoutes } from './customers/entities.routes';
import { healthRoutes } from './health/health.routes';
import { meterRoutes } from './meters/meters.routes';
import { usageRoutes } from './usage/usage.routes';
import { currencyRoutes } from './currencies/currencies.routes';
import { fxRateRoutes } from './fx-rates/fx-rates.routes';
import { geographyRoutes } from './geography/geography.routes';
import { paymentRoutes } from './payments/payments.routes';
import { invoiceRoutes } from './invoices/invoices.routes';
import { invoiceRunScheduleRoutes } from './invoice-run-schedules/invoice-run-schedules.routes';
import { invoiceRunRoutes } from './invoice-runs/invoice-runs.routes';
import { organisationSettingsRoutes } from './organisation-settings/settings.routes';
import { attributeRoutes } from './attributes/attributes.routes';
import { catalogRoutes } from './catalog/catalog.routes';
import { collectionRoutes } from './collections/collections.routes';
import { jobRoutes } from './jobs/jobs.routes';
import { objectRoutes } from './objects/objects.routes';
import { invoiceFileRoutes } from './invoices/invoice-files.routes';
import { invoiceTemplateRoutes } from './invoice-templates/invoice-templates.routes';
import { billingPlanRoutes } from './billing-plans/billing-plans.routes';
import { contractRoutes } from './contracts/contracts.routes';
import { fsmRoutes } from './fsm/fsm.routes';
import { revenueRoutes } from './revenue/revenue.routes';
import { webhookRoutes } from './webhooks/webhooks.routes';
import { emailTemplateRoutes } from './email-templates/email-templates.routes';
import { emailRoutes } from './emails/emails.routes';
import { creditNoteRoutes } from './credit-notes/credit-notes.routes';
import { creditRoutes } from './credits/credits.routes';
import { chatbotRoutes } from './chatbot/chatbot.routes';
import { couponRoutes } from './coupons/coupons.routes';
import { chargeRoutes } from './charges/charges.routes';
import { alertRoutes } from './alerts/alerts.routes';
import { gatewayRoutes } from './payments/gateway.routes';
import { entitlementRoutes } from './entitlements/entitlements.routes';

/** Every route of the API, in the order Express matches them. */
export function allRoutes(deps: AppDeps): Route[] {
  return [
    ...healthRoutes(deps),
    ...authRoutes(deps),
    ...appRoutes(deps),
    ...customerRoutes(deps),
    ...entityRoutes(deps),
    ...addressRoutes(deps),
    ...contactGroupRoutes(deps),
    ...usageRoutes(deps),
    ...meterRoutes(deps),
    ...entitlementRoutes(deps),
    ...fxRateRoutes(deps),
    ...geographyRoutes(deps),
    ...currencyRoutes(deps),
    ...paymentRoutes(deps),
    ...organisationSettingsRoutes(deps),
    ...attributeRoutes(deps),
    ...catalogRoutes(deps),
    ...billingPlanRoutes(deps),
    ...contractRoutes(deps),
    ...chargeRoutes(deps),
    ...couponRoutes(deps),
    ...alertRoutes(deps),
    ...gatewayRoutes(deps),
    ...invoiceRoutes(deps),
    ...invoiceFileRoutes(deps),
    ...creditNoteRoutes(deps),
    ...creditRoutes(deps),
    ...chatbotRoutes(deps),
    ...invoiceTemplateRoutes(deps),
    ...collectionRoutes(deps),
    ...invoiceRunRoutes(deps),
    ...invoiceRunScheduleRoutes(deps),
    ...webhookRoutes(deps),
    ...emailTemplateRoutes(deps),
    ...emailRoutes(deps),
    ...fsmRoutes(deps),
    ...revenueRoutes(deps),
    ...jobRoutes(deps),
    ...objectRoutes(deps),
  ];
}
