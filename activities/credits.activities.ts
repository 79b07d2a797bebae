import type { Services } from '../src/services';
import type { CreditActivities } from '../workflows/credit-expiry.types';

export function createCreditActivities(services: Services): CreditActivities {
  return {
    expireCreditLot: (input) => services.credits.expireLot(input),
  };
}
