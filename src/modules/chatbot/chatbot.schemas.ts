import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { freeText, reference } from '../../http/schemas';

/** The longest question the chatbot reads, in characters (400 beyond it). */
export const CHATBOT_MESSAGE_LIMIT = 2000;

export const sendMessageBody = z.object({
  conversationId: reference().optional().describe('go on with a conversation; absent: start one'),
  text: freeText(CHATBOT_MESSAGE_LIMIT).describe(`the question, at most ${CHATBOT_MESSAGE_LIMIT} characters`),
});

const reply = z.object({
  text: z.string(),
  data: z.record(z.string(), z.unknown()).nullable().describe('the figures or rows behind the answer'),
  sources: z.array(z.string()).describe('the API paths that give those figures, so that a person can check every number'),
});

export const sendMessageResponse = z.object({ conversationId: z.string(), reply });

export const conversationSchema = z.object({
  id: z.string(),
  title: z.string().describe('the first question, shortened'),
  messages: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const chatMessageSchema = z.object({
  id: z.string(),
  seq: z.number().int(),
  role: z.enum(['user', 'assistant']),
  text: z.string(),
  data: z.record(z.string(), z.unknown()).nullable(),
  sources: z.array(z.string()),
  intent: z.string().nullable().describe('on an answer: the question it answered (a query name), or help / candidates'),
  createdAt: z.string(),
});

export const conversationsQuery = pageQuery;
export const messagesQuery = pageQuery;

export type ChatReply = z.output<typeof reply>;
export type Conversation = z.output<typeof conversationSchema>;
export type ChatMessage = z.output<typeof chatMessageSchema>;
