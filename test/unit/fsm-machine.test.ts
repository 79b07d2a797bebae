import { checkMachine, type MachineDefinition } from '../../src/domain/fsm-machine';

const approval: MachineDefinition = {
  objectType: 'invoice',
  states: [
    { name: 'Prepared', builtIn: 'draft' },
    { name: 'Approved', builtIn: 'raised' },
    { name: 'Delivered', builtIn: 'sent' },
    { name: 'Settled', builtIn: 'paid' },
  ],
  transitions: [
    { action: 'approve', from: 'Prepared', to: 'Approved', effect: 'raise' },
    { action: 'deliver', from: 'Approved', to: 'Delivered', effect: 'send' },
    { action: 'settle', from: 'Delivered', to: 'Settled', effect: 'markPaid' },
    { action: 'settleNow', from: 'Prepared', to: 'Settled', effect: 'markPaid' },
  ],
};

describe('custom lifecycle machines', () => {
  it('when every custom transition matches its built-in effect, then the machine is accepted', () => {
    expect(checkMachine(approval)).toEqual([]);
  });

  it('when a transition claims a move the built-in lifecycle refuses, then it is named', () => {
    const problems = checkMachine({
      ...approval,
      transitions: [
        { action: 'skip', from: 'Prepared', to: 'Delivered', effect: 'raise' },
        { action: 'back', from: 'Settled', to: 'Prepared', effect: 'raise' },
        { action: 'x', from: 'Nowhere', to: 'Prepared', effect: 'raise' },
        { action: 'y', from: 'Prepared', to: 'Approved', effect: 'teleport' },
      ],
    });
    expect(problems.map((p) => p.path)).toEqual(['body.transitions.0', 'body.transitions.1', 'body.transitions.2.from', 'body.transitions.3.effect']);
  });

  it('when a state is bound to no built-in state, or named twice, then it is refused', () => {
    const problems = checkMachine({ objectType: 'contract', states: [{ name: 'Live', builtIn: 'active' }, { name: 'Live', builtIn: 'limbo' }], transitions: [] });
    expect(problems.map((p) => p.path)).toEqual(['body.states.1.builtIn', 'body.states.1.name']);
  });
});
