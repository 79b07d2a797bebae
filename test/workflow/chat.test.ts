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

  it('when an hour passes without a question, then the conversation ends, its turns counted', async () => {
    const conversationId = 'chat_idle';
    const handle = await environment().client.workflow.start(chatConversationWorkflow, {
      taskQueue: TASK_QUEUE,
      workflowId: chatWorkflowId(conversationId),
      args: [{ organisationId: 'org_1', conversationId, turns: 3 }],
    });
    expect(await handle.executeUpdate(chatMessageUpdate, { args: [{ text: 'one more', role: 'Admin' }] })).toMatchObject({ text: 'answer 7' });
    expect(await handle.result()).toBe(4);
  });
});
