import type { ExpireLotInput } from '../src/modules/credits';
import type { Services } from '../src/services';

export function createCreditActivities(services: Services) {
  return {
    expireCreditLot: (input: ExpireLotInput) => services.credits.expireLot(input),
  };
}

export type CreditActivities = ReturnType<typeof createCreditActivities>;
