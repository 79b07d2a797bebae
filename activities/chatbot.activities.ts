import type { AnswerInput, ChatbotAnswerService } from '../src/modules/chatbot/chatbot-answers.service';
import { withHeartbeat } from './adapter';

export function createChatbotActivities(chatbot: ChatbotAnswerService) {
  return {
    answerChatMessage: (input: AnswerInput) => withHeartbeat(() => chatbot.answer(input)),
  };
}

export type ChatbotActivities = ReturnType<typeof createChatbotActivities>;
