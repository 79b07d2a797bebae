import { WithStartWorkflowOperation, type Client, type WorkflowHandle, type WorkflowHandleWithStartDetails, type WorkflowStartOptions, type WorkflowUpdateHandle, type WorkflowUpdateOptions } from '@temporalio/client';
import type { QueryDefinition, SearchAttributePair, SignalDefinition, TypedSearchAttributes, UpdateDefinition } from '@temporalio/common';
// Types only: the workflows the worker registers (workflows/index.ts is its workflowsPath), by name.
import type * as registered from '../../workflows';
import { BILLING_KINDS, type BillingKind } from '../../workflows/ids';
import { BillingKindKey } from '../../workflows/search-attributes';
import type { QueueRole, TaskQueues } from './task-queues';

type Registered = typeof registered;

/**
 * The name of a registered workflow: its exported function's name, which Temporal records as the
 * workflow type in every history and running workflow. Never rename one.
 */
export type WorkflowName = keyof Registered;

/** Each registered workflow's input and result, by name, as its contract file (workflows/*.types.ts) declares them. */
export type WorkflowContracts = {
  [N in WorkflowName]: { input: Parameters<Registered[N]>[0]; result: Awaited<ReturnType<Registered[N]>> };
};

/** A workflow's signature by name: what Temporal's client types its handles and options with. */
export type WorkflowSignature<N extends WorkflowName> = (input: WorkflowContracts[N]['input']) => Promise<WorkflowContracts[N]['result']>;

/** Start options without the task queue, which the client fills in: the workflow's id, args, policies, search attributes. */
export type StartOptions<N extends WorkflowName> = Omit<WorkflowStartOptions<WorkflowSignature<N>>, 'taskQueue'>;

/** Every registered workflow has its `BillingKind` (the type checker refuses a workflow left out). */
const KINDS: Record<WorkflowName, BillingKind> = BILLING_KINDS;

/**
 * The workflows that run on a queue of their own; the rest run on the main queue. Many and short-lived,
 * they would otherwise fill the operators' list and wait behind billing work. A workflow's activities run
 * on its queue.
 */
const QUEUES: Partial<Record<WorkflowName, QueueRole>> = {
  webhookDeliveryWorkflow: 'webhooks',
  chatConversationWorkflow: 'chatbot',
};

/** The task queue a workflow type is started on. */
export function queueOf(queues: TaskQueues, name: WorkflowName): string {
  return queues[QUEUES[name] ?? 'main'];
}

/** The search attributes given, with the workflow type's `BillingKind`. */
function withKind(name: WorkflowName, given: SearchAttributePair[] | TypedSearchAttributes | undefined): SearchAttributePair[] {
  const pairs = given === undefined ? [] : Array.isArray(given) ? given : given.getAll();
  return [...pairs.filter((pair) => pair.key.name !== BillingKindKey.name), { key: BillingKindKey, value: KINDS[name] }];
}

/**
 * The one way services drive workflows: by workflow type name, typed against the workflow's input and
 * result, on the workflow type's task queue, with its `BillingKind`. No workflow code is imported, only its
 * contract's types; Update, Query and Signal definitions come from the workflow's contract file.
 */
export function createWorkflowsClient(client: Client, queues: TaskQueues) {
  const options = <N extends WorkflowName>(name: N, start: StartOptions<N>): WorkflowStartOptions<WorkflowSignature<N>> =>
    ({ ...start, taskQueue: queueOf(queues, name), typedSearchAttributes: withKind(name, start.typedSearchAttributes) }) as WorkflowStartOptions<WorkflowSignature<N>>;
  return {
    /** Starts the workflow and answers its handle (its first run's id among the details). */
    start<N extends WorkflowName>(name: N, start: StartOptions<N>): Promise<WorkflowHandleWithStartDetails<WorkflowSignature<N>>> {
      return client.workflow.start<WorkflowSignature<N>>(name, options(name, start));
    },

    /** Starts the workflow and waits for its result. */
    execute<N extends WorkflowName>(name: N, start: StartOptions<N>): Promise<WorkflowContracts[N]['result']> {
      return client.workflow.execute<WorkflowSignature<N>>(name, options(name, start));
    },

    /** The start of an update-with-start (`executeUpdateWithStart`). */
    withStart<N extends WorkflowName>(name: N, start: StartOptions<N> & Required<Pick<StartOptions<N>, 'workflowIdConflictPolicy'>>): WithStartWorkflowOperation<WorkflowSignature<N>> {
      return new WithStartWorkflowOperation<WorkflowSignature<N>>(name, { ...options(name, start), workflowIdConflictPolicy: start.workflowIdConflictPolicy });
    },

    /** Runs an Update, starting the workflow first if none runs under the operation's id. */
    executeUpdateWithStart<N extends WorkflowName, Ret, Args extends unknown[]>(
      update: UpdateDefinition<Ret, Args>,
      call: WorkflowUpdateOptions & { args?: Args; startWorkflowOperation: WithStartWorkflowOperation<WorkflowSignature<N>> },
    ): Promise<Ret> {
      return client.workflow.executeUpdateWithStart(update, call as WorkflowUpdateOptions & { args: Args; startWorkflowOperation: WithStartWorkflowOperation<WorkflowSignature<N>> });
    },

    /** Sends an Update, starting the workflow first if none runs under the operation's id; answers once the workflow has accepted it. */
    startUpdateWithStart<N extends WorkflowName, Ret, Args extends unknown[]>(
      update: UpdateDefinition<Ret, Args>,
      call: WorkflowUpdateOptions & { args?: Args; startWorkflowOperation: WithStartWorkflowOperation<WorkflowSignature<N>> },
    ): Promise<WorkflowUpdateHandle<Ret>> {
      return client.workflow.startUpdateWithStart(update, { ...call, waitForStage: 'ACCEPTED' } as WorkflowUpdateOptions & { args: Args; waitForStage: 'ACCEPTED'; startWorkflowOperation: WithStartWorkflowOperation<WorkflowSignature<N>> });
    },

    /** Sends the signal to the workflow running under the id, starting it first if none runs. */
    signalWithStart<N extends WorkflowName, Args extends unknown[]>(name: N, start: StartOptions<N> & { signal: SignalDefinition<Args>; signalArgs: Args }): Promise<WorkflowHandle<WorkflowSignature<N>>> {
      const { signal, signalArgs, ...rest } = start;
      const withSignal = { ...options(name, rest as StartOptions<N>), signal, signalArgs };
      // The start options are the ones `start` takes; Temporal's type spells the signal's variant of them apart.
      return client.workflow.signalWithStart<WorkflowSignature<N>, Args>(name, withSignal as unknown as Parameters<typeof client.workflow.signalWithStart<WorkflowSignature<N>, Args>>[1]);
    },

    /** A running (or closed) workflow of that type, by id: its result, description, cancellation. */
    handle<N extends WorkflowName>(_name: N, workflowId: string): WorkflowHandle<WorkflowSignature<N>> {
      return client.workflow.getHandle<WorkflowSignature<N>>(workflowId);
    },

    query<Ret, Args extends unknown[]>(workflowId: string, query: QueryDefinition<Ret, Args>, ...args: Args): Promise<Ret> {
      return client.workflow.getHandle(workflowId).query(query, ...args);
    },

    signal<Args extends unknown[]>(workflowId: string, signal: SignalDefinition<Args>, ...args: Args): Promise<void> {
      return client.workflow.getHandle(workflowId).signal(signal, ...args);
    },
  };
}

export type WorkflowsClient = ReturnType<typeof createWorkflowsClient>;
