import type { AnswerInput, ChatbotAnswerService } from '../src/modules/chatbot/chatbot-answers.service';

export function createChatbotActivities(chatbot: ChatbotAnswerService) {
  return {
    answerChatMessage: (input: AnswerInput) => chatbot.answer(input),
  };
}

export type ChatbotActivities = ReturnType<typeof createChatbotActivities>;
