import type { AnswerInput, ChatbotAnswerService, ModelStepInput, ModelTurnInput, ToolCallInput } from '../src/modules/chatbot';
import { Context } from '@temporalio/activity';
import { withHeartbeat } from './adapter';

export function createChatbotActivities(chatbot: ChatbotAnswerService) {
  return {
    /** A turn of the built-in engine, whole. */
    answerChatMessage: (input: AnswerInput) => withHeartbeat(() => chatbot.answer(input)),
    /** The model engine: one call to the model, one tool call, the turn stored. */
    // Cancelled (a timeout, the worker shutting down): the request to the model is aborted too.
    chatModelStep: (input: ModelStepInput) => withHeartbeat(() => chatbot.modelStep(input, Context.current().cancellationSignal)),
    chatToolCall: (input: ToolCallInput) => withHeartbeat(() => chatbot.runTool(input)),
    recordChatTurn: (input: ModelTurnInput) => withHeartbeat(() => chatbot.recordModelTurn(input)),
  };
}

export type ChatbotActivities = ReturnType<typeof createChatbotActivities>;
