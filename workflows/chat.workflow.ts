import { condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { chatMessageUpdate, type ChatbotActivities, type ChatReply, type ChatRole, type ChatWorkflowInput, type ToolStep } from './chat.types';
import { activitiesOf, idle, Mutex } from './shared';

const chatbotActivities = activitiesOf<Omit<ChatbotActivities, 'chatModelStep'>>('chatTurn');
const modelActivities = activitiesOf<Pick<ChatbotActivities, 'chatModelStep'>>('modelCall');

/** Calls to the model one question may take (each may ask for tools) before the turn gives up. */
const MODEL_STEPS = 6;

/** Turns one run of the workflow takes before it continues as new, so that its history stays small. */
const TURNS_PER_RUN = 50;
/** How long a conversation started without `idleSeconds` waits for a question before it ends. */
const IDLE_BEFORE_SETTING = '1 hour';

/**
 * One workflow per conversation: its questions are Updates, answered one after another, each by one
 * activity that reads, answers and stores the turn once (a worker that dies mid-answer leaves the turn to
 * be retried, and a retry finds what was stored).
 */
export async function chatConversationWorkflow(input: ChatWorkflowInput): Promise<number> {
  let turns = input.turns;
  // A conversation without a question for this long ends; the next question starts it again from Postgres.
  const idleFor = input.idleSeconds === undefined ? IDLE_BEFORE_SETTING : input.idleSeconds * 1000;
  const lock = new Mutex();
  const where = () => ({ organisationId: input.organisationId, conversationId: input.conversationId, seq: turns * 2 + 1 });

  /**
   * The model engine: the model proposes tool calls, each run as its own activity under the asker's role,
   * until it answers. The answer's figures and sources are the tools' results. A worker that dies between
   * two calls resumes from the history: no tool runs twice, and the turn is stored once.
   */
  async function askModel(text: string, role: ChatRole): Promise<ChatReply> {
    const steps: ToolStep[] = [];
    let answer: string | undefined;
    for (let call = 0; call < MODEL_STEPS && answer === undefined; call += 1) {
      const step = await modelActivities.chatModelStep({ ...where(), text, steps });
      if (step.kind === 'text') answer = step.text;
      // On the last step the model would never read the results: its calls are not run.
      else if (call < MODEL_STEPS - 1) {
        for (const proposed of step.calls) steps.push({ ...proposed, result: await chatbotActivities.chatToolCall({ organisationId: input.organisationId, role, name: proposed.name, input: proposed.input }) });
      }
    }
    // The figures: what the tools found (a refusal, or a name that fits none or several, has none).
    const results = steps.flatMap((step) => ('error' in step.result || step.result.data === null ? [] : [{ tool: step.name, input: step.input, data: step.result.data }]));
    const sources = [...new Set(steps.flatMap((step) => ('error' in step.result ? [] : step.result.sources)))];
    const reply = { text: answer ?? 'I could not finish answering this question; please ask it in simpler words.', data: { results }, sources };
    return chatbotActivities.recordChatTurn({ ...where(), text, reply, intent: 'model' });
  }

  setHandler(chatMessageUpdate, (message) =>
    lock.runExclusive(async () => {
      const reply =
        message.engine === 'model'
          ? await askModel(message.text, message.role)
          : await chatbotActivities.answerChatMessage({ ...where(), text: message.text, role: message.role });
      turns += 1;
      return reply;
    }),
  );
  for (;;) {
    const started = turns;
    const busy = await condition(() => (turns !== started || turns - input.turns >= TURNS_PER_RUN || workflowInfo().continueAsNewSuggested) && idle(lock), idleFor);
    if (!busy && idle(lock)) return turns;
    if ((turns - input.turns >= TURNS_PER_RUN || workflowInfo().continueAsNewSuggested) && idle(lock)) return continueAsNew<typeof chatConversationWorkflow>({ ...input, turns });
  }
}
