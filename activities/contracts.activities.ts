import type { Services } from '../src/services';
import type { ContractActivities } from '../workflows/contract.types';

export function createContractActivities(services: Services): ContractActivities {
  return {
    setContractStatus: (input) => services.contractLifecycle.setStatus(input),
    achieveMilestone: (input) => services.contractLifecycle.achieveMilestone(input),
    changePlan: (input) => services.planChangeLifecycle.changePlan(input),
    undoPlanChange: (input) => services.planChangeLifecycle.undoPlanChange(input),
  };
}
