import type { AppDeps } from '../../deps';
import { pageOf } from '../../http/paging';
import { subjectRateLimit } from '../../http/router';
import { defineRoute, requires, type Route } from '../../http/route';
import { idParam } from '../../http/schemas';
import { chatMessageSchema, conversationSchema, conversationsQuery, messagesQuery, sendMessageBody, sendMessageResponse } from './chatbot.schemas';

const TAG = 'Chatbot';

export function chatbotRoutes(deps: AppDeps): Route[] {
  const { chatbot } = deps.services;
  // Each app (or user) asks at most CHATBOT_MESSAGES_PER_MINUTE questions a minute, beside the general limit.
  const perAsker = subjectRateLimit(deps.config.CHATBOT_MESSAGES_PER_MINUTE, deps.rateLimitStore?.('chatbot'));
  return [
    defineRoute({
      method: 'post',
      path: '/chatbot/messages',
      summary: "Ask a finance question about the organisation's own data: the answer comes with the figures behind it and the API paths that give them",
      tag: TAG,
      access: requires('ChatbotService:sendMessage'),
      before: [perAsker],
      body: sendMessageBody,
      response: sendMessageResponse,
      handler: async ({ body, auth, req }) => chatbot.send(auth, body, req.header('Idempotency-Key') ?? undefined),
    }),
    defineRoute({
      method: 'get',
      path: '/chatbot/conversations',
      summary: "The organisation's chatbot conversations that hold an answer, the latest first",
      tag: TAG,
      access: requires('ChatbotService:sendMessage'),
      query: conversationsQuery,
      response: pageOf(conversationSchema),
      handler: async ({ query, auth }) => chatbot.conversations(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/chatbot/conversations/{id}/messages',
      summary: "A conversation's questions and answers, in order",
      tag: TAG,
      access: requires('ChatbotService:sendMessage'),
      params: idParam,
      query: messagesQuery,
      response: pageOf(chatMessageSchema),
      handler: async ({ params, query, auth }) => chatbot.messages(auth.organisationId, params.id, query),
    }),
  ];
}
