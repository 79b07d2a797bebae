import type { AchieveMilestoneInput, SetContractStatusInput, ChangePlanInput, UndoPlanChangeInput } from '../src/modules/lifecycles';
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
