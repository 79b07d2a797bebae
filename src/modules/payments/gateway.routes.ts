import { pageOf, pageQuery } from '../../http/paging';
import { rawBodyOf } from '../../http/raw-body';
import { defineRoute, publicAccess, requires, type Route } from '../../http/route';
import { documented, type RouteDocumentation } from '../../http/openapi';
import { deleted, deletedSchema, idParam } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import {
  createDunningCampaignBody,
  customerPaymentProviderSchema,
  dunningCampaignListQuery,
  dunningCampaignSchema,
  linkCustomerBody,
  paymentAttemptSchema,
  providerAccountSchema,
  reconciliationQuery,
  reconciliationSchema,
  saveStripeAccountBody,
  updateDunningCampaignBody,
  webhookParams,
  webhookReceiptSchema,
} from './gateway.schemas';

/** A read that asks the gateway: the organisation has no credentials, or the gateway refuses them. */
const GATEWAY_REFUSES: RouteDocumentation = { errors: { 409: 'The organisation has no Stripe credentials, or Stripe refused them (the message says which)' } };

const manageProviders = requires('PaymentProviderService:manageProviders');
const manageCampaigns = requires('DunningCampaignService:manageCampaigns');
const linkCustomer = requires('PaymentProviderService:linkCustomer');

export function gatewayRoutes(deps: AppDeps): Route[] {
  const gateway = deps.services.paymentGateway;
  return [
    defineRoute({
      method: 'put',
      path: '/payment-providers/stripe',
      summary: "Set the organisation's Stripe credentials and when invoices are charged; the secrets are stored sealed and never shown again",
      tag: 'Payment providers',
      access: manageProviders,
      body: saveStripeAccountBody,
      response: providerAccountSchema,
      handler: async ({ body, auth }) => gateway.saveStripeAccount(auth.organisationId, body),
    }),
    documented(
      defineRoute({
        method: 'get',
        path: '/payment-providers/stripe',
        summary: "The organisation's Stripe set-up: the secret key's last four characters, never the secrets",
        tag: 'Payment providers',
        access: manageProviders,
        response: providerAccountSchema,
        handler: async ({ auth }) => gateway.stripeAccount(auth.organisationId),
      }),
      { errors: { 404: 'The organisation has not set up Stripe (PUT /payment-providers/stripe)' } },
    ),
    defineRoute({
      method: 'post',
      path: '/payment-providers/stripe/webhook/{organisationId}',
      summary:
        "Stripe's webhook for the organisation: the Stripe-Signature header is verified with its webhook secret (400 if it does not match, nothing recorded); each event is handled once",
      tag: 'Payment providers',
      access: publicAccess,
      params: webhookParams,
      response: webhookReceiptSchema,
      handler: async ({ params, req }) => gateway.receiveStripeWebhook(params.organisationId, rawBodyOf(req), req.header('Stripe-Signature')),
    }),
    documented(defineRoute({
      method: 'get',
      path: '/payment-providers/stripe/reconciliation',
      summary:
        "Stripe's payments of the last days against ours, as the daily reconciliation last found them (or now, with refresh=true): those missing on either side and those whose state or amount differ",
      tag: 'Payment providers',
      access: manageProviders,
      query: reconciliationQuery,
      response: reconciliationSchema,
      handler: async ({ query, auth }) => gateway.reconciliation(auth.organisationId, { days: query.days, refresh: query.refresh }),
    }), GATEWAY_REFUSES),
    defineRoute({
      method: 'post',
      path: '/customers/{id}/payment-provider',
      summary: "Link the customer to its account at the gateway (the one named, else one created there); its invoices are then charged through it",
      tag: 'Payment providers',
      access: linkCustomer,
      params: idParam,
      body: linkCustomerBody,
      response: customerPaymentProviderSchema,
      successStatus: 201,
      handler: async ({ params, body, auth, setSuccessStatus }) => {
        const { link, created } = await gateway.linkCustomer(auth.organisationId, params.id, body);
        if (!created) setSuccessStatus(200);
        return link;
      },
    }),
    documented(defineRoute({
      method: 'get',
      path: '/customers/{id}/payment-provider',
      summary: "The customer's account at the gateway and its default payment method's brand and last digits",
      tag: 'Payment providers',
      access: linkCustomer,
      params: idParam,
      response: customerPaymentProviderSchema,
      handler: async ({ params, auth }) => gateway.customerLink(auth.organisationId, params.id),
    }), GATEWAY_REFUSES),
    defineRoute({
      method: 'get',
      path: '/invoices/{id}/payment-attempts',
      summary: "The invoice's charges through the gateway, first attempt first",
      tag: 'Payment providers',
      access: requires('PaymentService:getPaymentAttempts'),
      params: idParam,
      query: pageQuery,
      response: pageOf(paymentAttemptSchema),
      handler: async ({ params, query, auth }) => gateway.attempts(auth.organisationId, params.id, query),
    }),
    defineRoute({
      method: 'post',
      path: '/dunning-campaigns',
      summary: 'Create a dunning campaign: how many attempts a failed collection gets and how many days apart, for the organisation or one customer',
      tag: 'Dunning campaigns',
      access: manageCampaigns,
      body: createDunningCampaignBody,
      response: dunningCampaignSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => gateway.createCampaign(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/dunning-campaigns',
      summary: 'List dunning campaigns, newest first',
      tag: 'Dunning campaigns',
      access: manageCampaigns,
      query: dunningCampaignListQuery,
      response: pageOf(dunningCampaignSchema),
      handler: async ({ query, auth }) => gateway.campaigns(auth.organisationId, query, query.customerId),
    }),
    defineRoute({
      method: 'get',
      path: '/dunning-campaigns/{id}',
      summary: 'Read a dunning campaign',
      tag: 'Dunning campaigns',
      access: manageCampaigns,
      params: idParam,
      response: dunningCampaignSchema,
      handler: async ({ params, auth }) => gateway.campaign(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/dunning-campaigns/{id}',
      summary: "Change a dunning campaign; collections in their wait read it when they wake",
      tag: 'Dunning campaigns',
      access: manageCampaigns,
      params: idParam,
      body: updateDunningCampaignBody,
      response: dunningCampaignSchema,
      handler: async ({ params, body, auth }) => gateway.updateCampaign(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/dunning-campaigns/{id}',
      summary: 'Delete a dunning campaign: failed collections it governed are not tried again',
      tag: 'Dunning campaigns',
      access: manageCampaigns,
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await gateway.deleteCampaign(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
  ];
}
