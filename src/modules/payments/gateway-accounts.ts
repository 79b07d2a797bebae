import type { Knex } from 'knex';
import { AppError } from '../../domain/errors';
import type { SecretBox } from '../../security/secret-box';
import { createGatewayRepository, type ProviderAccountRow, type ProviderName } from './gateway.repository';
import type { PaymentProvider } from './providers/provider';
import { stripeProvider, type StripeEndpoint } from './providers/stripe';

export interface GatewayDeps {
  db: Knex;
  secrets: SecretBox;
  stripe: StripeEndpoint;
}

/**
 * An organisation's gateway, from the credentials it saved: the secrets are opened only here, to build the
 * adapter, and never leave the process. A client is kept per organisation until its credentials change.
 */
export function gatewayAccounts(deps: GatewayDeps) {
  const repository = createGatewayRepository(deps.db);
  const clients = new Map<string, { savedAt: number; provider: PaymentProvider }>();

  function providerFor(account: ProviderAccountRow): PaymentProvider {
    const key = `${account.organisation_id}:${account.provider}`;
    const kept = clients.get(key);
    if (kept && kept.savedAt === account.updated_at.getTime()) return kept.provider;
    const provider = stripeProvider(deps.secrets.open(account.secret_key), deps.stripe);
    clients.set(key, { savedAt: account.updated_at.getTime(), provider });
    return provider;
  }

  return {
    providerFor,
    /** The organisation's gateway; 409 when it has not set one up. */
    async connected(organisationId: string, provider: ProviderName = 'stripe'): Promise<{ account: ProviderAccountRow; provider: PaymentProvider }> {
      const account = await repository.findAccount(organisationId, provider);
      if (!account) throw AppError.conflict(`the organisation has no ${provider} credentials: PUT /payment-providers/${provider} first`);
      return { account, provider: providerFor(account) };
    },
  };
}

export type GatewayAccounts = ReturnType<typeof gatewayAccounts>;
