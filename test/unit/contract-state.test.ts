import fc from 'fast-check';
import { CONTRACT_ACTIONS, CONTRACT_STATES, allowedContractActions, contractTransition, isFinal } from '../../src/domain/contract-state';

describe('contract lifecycle rules', () => {
  it.each([
    ['draft', 'activate', 'active'],
    ['active', 'suspend', 'suspended'],
    ['suspended', 'resume', 'active'],
    ['active', 'end', 'ended'],
    ['suspended', 'end', 'ended'],
    ['draft', 'terminate', 'terminated'],
    ['active', 'terminate', 'terminated'],
  ] as const)('when a %s contract is asked to %s, then it becomes %s', (state, action, to) => {
    expect(contractTransition(state, action)).toEqual({ ok: true, to });
  });

  it.each([
    ['draft', 'resume'],
    ['draft', 'suspend'],
    ['active', 'activate'],
    ['ended', 'activate'],
    ['terminated', 'resume'],
  ] as const)('when a %s contract is asked to %s, then it is refused', (state, action) => {
    expect(contractTransition(state, action)).toEqual({ ok: false, reason: `cannot ${action} a contract that is ${state}` });
  });

  it('when a contract has ended or was terminated, then no action is allowed', () => {
    fc.assert(fc.property(fc.constantFrom(...CONTRACT_STATES), (state) => {
      expect(allowedContractActions(state).length === 0).toBe(isFinal(state));
    }));
  });

  it('when an action is allowed, then the transition succeeds, and only then', () => {
    fc.assert(fc.property(fc.constantFrom(...CONTRACT_STATES), fc.constantFrom(...CONTRACT_ACTIONS), (state, action) => {
      expect(contractTransition(state, action).ok).toBe(allowedContractActions(state).includes(action));
    }));
  });
});
