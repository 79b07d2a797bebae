import { CONTRACT_ACTIONS, CONTRACT_STATES, contractTransition, type ContractAction, type ContractState } from './contract-state';
import { INVOICE_STATES, planAction, targetOf, type InvoiceState } from './invoice-state';

/**
 * A custom lifecycle machine names its own states and actions, each bound to the built-in ones: a custom
 * state stands for one built-in state, and a custom transition runs one built-in action whose effect
 * (activities, compensations) is the built-in one. Checked here so that a machine can never describe a
 * move the built-in lifecycle would refuse.
 */
export interface MachineDefinition {
  objectType: 'invoice' | 'contract';
  states: Array<{ name: string; builtIn: string }>;
  transitions: Array<{ action: string; from: string; to: string; effect: string }>;
}

export interface MachineProblem {
  path: string;
  message: string;
}

const BUILT_IN = {
  invoice: { states: INVOICE_STATES as readonly string[], actions: ['raise', 'send', 'markPaid', 'cancel'] as readonly string[] },
  contract: { states: CONTRACT_STATES as readonly string[], actions: CONTRACT_ACTIONS as readonly string[] },
};

function builtInTarget(objectType: MachineDefinition['objectType'], from: string, effect: string): string | undefined {
  if (objectType === 'contract') {
    const next = contractTransition(from as ContractState, effect as ContractAction);
    return next.ok ? next.to : undefined;
  }
  const plan = planAction(from as InvoiceState, effect as 'raise' | 'send' | 'markPaid' | 'cancel');
  return plan.ok ? targetOf(plan.steps.at(-1)!) : undefined;
}

export function checkMachine(machine: MachineDefinition): MachineProblem[] {
  const builtIn = BUILT_IN[machine.objectType];
  const problems: MachineProblem[] = [];
  const states = new Map<string, string>();
  machine.states.forEach((state, i) => {
    if (!builtIn.states.includes(state.builtIn)) problems.push({ path: `body.states.${i}.builtIn`, message: `one of ${builtIn.states.join(', ')}` });
    if (states.has(state.name)) problems.push({ path: `body.states.${i}.name`, message: 'state names must be unique' });
    states.set(state.name, state.builtIn);
  });
  machine.transitions.forEach((transition, i) => {
    const path = `body.transitions.${i}`;
    const from = states.get(transition.from);
    const to = states.get(transition.to);
    if (from === undefined) return void problems.push({ path: `${path}.from`, message: 'not a state of this machine' });
    if (to === undefined) return void problems.push({ path: `${path}.to`, message: 'not a state of this machine' });
    if (!builtIn.actions.includes(transition.effect)) return void problems.push({ path: `${path}.effect`, message: `one of ${builtIn.actions.join(', ')}` });
    const target = builtInTarget(machine.objectType, from, transition.effect);
    if (target !== to) {
      problems.push({ path, message: `${transition.effect} from ${from} ${target ? `leads to ${target}` : 'is not allowed'}, not to ${to}` });
    }
  });
  return problems;
}
