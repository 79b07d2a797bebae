import type { AchieveMilestoneInput, SetContractStatusInput } from '../src/modules/contracts/contract-lifecycle.service';
import type { ChangePlanInput, UndoPlanChangeInput } from '../src/modules/contracts/plan-change-lifecycle.service';
import type { Services } from '../src/services';

export function createContractActivities(services: Services) {
  return {
    setContractStatus: (input: SetContractStatusInput) => services.contractLifecycle.setStatus(input),
    achieveMilestone: (input: AchieveMilestoneInput) => services.contractLifecycle.achieveMilestone(input),
    changePlan: (input: ChangePlanInput) => services.planChangeLifecycle.changePlan(input),
    undoPlanChange: (input: UndoPlanChangeInput) => services.planChangeLifecycle.undoPlanChange(input),
  };
}

export type ContractActivities = ReturnType<typeof createContractActivities>;
