import { condition, continueAsNew, defineUpdate, setHandler, workflowInfo } from '@temporalio/workflow';
import type { ChatbotActivities } from '../activities/chatbot.activities';
import { chatbotActivities, idle, Mutex } from './shared';

type AnswerInput = Parameters<ChatbotActivities['answerChatMessage']>[0];
type ChatReply = Awaited<ReturnType<ChatbotActivities['answerChatMessage']>>;

/** A question: its words and the asker's role, under which it is answered. Stored in histories: never rename. */
export const chatMessageUpdate = defineUpdate<ChatReply, [Pick<AnswerInput, 'text' | 'role'>]>('message');

export interface ChatWorkflowInput {
  organisationId: string;
  conversationId: string;
  /** Turns already taken, as Postgres records them (a conversation picked up again after a pause). */
  turns: number;
}

/** Turns one run of the workflow takes before it continues as new, so that its history stays small. */
const TURNS_PER_RUN = 50;
/** A conversation without a question for this long ends; the next question starts it again. */
const IDLE = '1 hour';

/**
 * One workflow per conversation: its questions are Updates, answered one after another, each by one
 * activity that reads, answers and stores the turn once (a worker that dies mid-answer leaves the turn to
 * be retried, and a retry finds what was stored).
 */
export async function chatConversationWorkflow(input: ChatWorkflowInput): Promise<number> {
  let turns = input.turns;
  const lock = new Mutex();
  setHandler(chatMessageUpdate, (message) =>
    lock.runExclusive(async () => {
      const reply = await chatbotActivities.answerChatMessage({ organisationId: input.organisationId, conversationId: input.conversationId, seq: turns * 2 + 1, text: message.text, role: message.role });
      turns += 1;
      return reply;
    }),
  );
  for (;;) {
    const started = turns;
    const busy = await condition(() => (turns !== started || turns - input.turns >= TURNS_PER_RUN || workflowInfo().continueAsNewSuggested) && idle(lock), IDLE);
    if (!busy && idle(lock)) return turns;
    if ((turns - input.turns >= TURNS_PER_RUN || workflowInfo().continueAsNewSuggested) && idle(lock)) return continueAsNew<typeof chatConversationWorkflow>({ ...input, turns });
  }
}
