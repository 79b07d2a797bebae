import { chatMessageUpdate, type ChatbotActivities } from '../../workflows/chat.types';
import { chatConversationWorkflow } from '../../workflows/chat.workflow';
import { chatWorkflowId } from '../../workflows/shared';
import { TASK_QUEUE, timeSkippingEnvironment, useWorkflowEnvironment } from './support/environment';
import { fakeActivities } from './support/fake-activities';

jest.setTimeout(60_000);

const fakes = fakeActivities<ChatbotActivities>({
  answerChatMessage: async (input) => ({ text: `answer ${String(input.seq)}`, data: null, sources: [] }),
  chatModelStep: async () => ({ kind: 'text', text: 'unused' }),
  chatToolCall: async () => ({ error: 'unused' }),
  recordChatTurn: async (input) => input.reply,
});

const environment = useWorkflowEnvironment(timeSkippingEnvironment, fakes.activities);

beforeEach(() => fakes.reset());

describe('the chat conversation workflow', () => {
  it('when 50 questions have been answered, then it continues as new and the next question takes the next place', async () => {
    const conversationId = 'chat_bound';
    const handle = await environment().client.workflow.start(chatConversationWorkflow, {
      taskQueue: TASK_QUEUE,
      workflowId: chatWorkflowId(conversationId),
      args: [{ organisationId: 'org_1', conversationId, turns: 0 }],
    });
    const firstRun = (await handle.describe()).runId;
    for (let turn = 0; turn < 50; turn += 1) await handle.executeUpdate(chatMessageUpdate, { args: [{ text: `question ${turn}`, role: 'SystemUser' }] });
    // The 50th answer ends the run; the next question reaches the run that continues it.
    const next = await environment().client.workflow.getHandle(chatWorkflowId(conversationId)).executeUpdate(chatMessageUpdate, { args: [{ text: 'question 50', role: 'SystemUser' }] });
    expect(next.text).toBe('answer 101');
    expect((await environment().client.workflow.getHandle(chatWorkflowId(conversationId)).describe()).runId).not.toBe(firstRun);
    expect(fakes.callsOf('answerChatMessage').map((call) => call.input.seq)).toEqual(Array.from({ length: 51 }, (_, turn) => turn * 2 + 1));
  });

  it('when a conversation started before the idle setting existed gets no question for an hour, then it ends, its turns counted', async () => {
    const conversationId = 'chat_idle';
    const handle = await environment().client.workflow.start(chatConversationWorkflow, {
      taskQueue: TASK_QUEUE,
      workflowId: chatWorkflowId(conversationId),
      args: [{ organisationId: 'org_1', conversationId, turns: 3 }],
    });
    expect(await handle.executeUpdate(chatMessageUpdate, { args: [{ text: 'one more', role: 'Admin' }] })).toMatchObject({ text: 'answer 7' });
    const answeredAt = await environment().currentTimeMs();
    expect(await handle.result()).toBe(4);
    expect((await handle.describe()).closeTime!.getTime() - answeredAt).toBeGreaterThanOrEqual(3_600_000 - 1_000);
  });

  it('when a conversation gets no question for its idle time (5 minutes), then it ends minutes after its last answer, not an hour', async () => {
    const conversationId = 'chat_idle_minutes';
    const handle = await environment().client.workflow.start(chatConversationWorkflow, {
      taskQueue: TASK_QUEUE,
      workflowId: chatWorkflowId(conversationId),
      args: [{ organisationId: 'org_1', conversationId, turns: 1, idleSeconds: 300 }],
    });
    expect(await handle.executeUpdate(chatMessageUpdate, { args: [{ text: 'first', role: 'Admin' }] })).toMatchObject({ text: 'answer 3' });
    const answeredAt = await environment().currentTimeMs();
    // Four minutes on, a question keeps the same run open, and the idle time counts again from its answer.
    await environment().sleep(240_000);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(await handle.executeUpdate(chatMessageUpdate, { args: [{ text: 'second', role: 'Admin' }] })).toMatchObject({ text: 'answer 5' });
    const lastAnsweredAt = await environment().currentTimeMs();
    expect(await handle.result()).toBe(3);
    const closedAt = (await handle.describe()).closeTime!.getTime();
    expect(closedAt - lastAnsweredAt).toBeGreaterThanOrEqual(300_000 - 1_000);
    expect(closedAt - answeredAt).toBeLessThan(3_600_000);
  });
});
