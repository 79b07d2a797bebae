/** The contract lifecycle (docs/decisions.md): draft → active → suspended ⇄ active → ended / terminated. */
export const CONTRACT_STATES = ['draft', 'active', 'suspended', 'ended', 'terminated'] as const;
export type ContractState = (typeof CONTRACT_STATES)[number];

export const CONTRACT_ACTIONS = ['activate', 'suspend', 'resume', 'end', 'terminate'] as const;
export type ContractAction = (typeof CONTRACT_ACTIONS)[number];

const TRANSITIONS: Record<ContractAction, { from: readonly ContractState[]; to: ContractState }> = {
  activate: { from: ['draft'], to: 'active' },
  suspend: { from: ['active'], to: 'suspended' },
  resume: { from: ['suspended'], to: 'active' },
  end: { from: ['active', 'suspended'], to: 'ended' },
  terminate: { from: ['draft', 'active', 'suspended'], to: 'terminated' },
};

export function contractTransition(state: ContractState, action: ContractAction): { ok: true; to: ContractState } | { ok: false; reason: string } {
  const rule = TRANSITIONS[action];
  return rule.from.includes(state) ? { ok: true, to: rule.to } : { ok: false, reason: `cannot ${action} a contract that is ${state}` };
}

export function allowedContractActions(state: ContractState): ContractAction[] {
  return CONTRACT_ACTIONS.filter((action) => TRANSITIONS[action].from.includes(state));
}

export function isFinal(state: ContractState): boolean {
  return state === 'ended' || state === 'terminated';
}
