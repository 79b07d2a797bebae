import type { ChatbotAnswerService } from '../src/modules/chatbot';
import type { ChatbotActivities } from '../workflows/chat.types';
import { Context } from '@temporalio/activity';
import { withHeartbeat } from './adapter';

export function createChatbotActivities(chatbot: ChatbotAnswerService): ChatbotActivities {
  return {
    /** A turn of the built-in engine, whole. */
    answerChatMessage: (input) => withHeartbeat(() => chatbot.answer(input)),
    /** The model engine: one call to the model, one tool call, the turn stored. */
    // Cancelled (a timeout, the worker shutting down): the request to the model is aborted too.
    chatModelStep: (input) => withHeartbeat(() => chatbot.modelStep(input, Context.current().cancellationSignal)),
    chatToolCall: (input) => withHeartbeat(() => chatbot.runTool(input)),
    recordChatTurn: (input) => withHeartbeat(() => chatbot.recordModelTurn(input)),
  };
}
