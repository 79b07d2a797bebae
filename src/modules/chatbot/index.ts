export { createChatbotAnswerService } from './chatbot-answers.service';
export type { AnswerInput, ChatbotAnswerService, ModelStepInput, ModelTurnInput, ToolCallInput } from './chatbot-answers.service';
export { createChatbotService } from './chatbot.service';
export type { ModelSettings } from './model-engine';
