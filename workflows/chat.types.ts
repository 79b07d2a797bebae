import { defineUpdate } from '@temporalio/workflow';

/** The contract of `chatConversationWorkflow`: its input, its Update and its activities. */

/** Which engine answers: the built-in one (absent), or a language model. */
export type ChatEngine = 'builtin' | 'model';

/** The role a question is asked under; the chatbot's tools read what that role may read. */
export type ChatRole = 'Admin' | 'SystemUser';

export interface ChatWorkflowInput {
  organisationId: string;
  conversationId: string;
  /** Turns already taken, as Postgres records them (a conversation picked up again after a pause). */
  turns: number;
  /**
   * Seconds without a question after which the conversation's workflow ends (CHATBOT_IDLE_SECONDS); the
   * next question starts it again. Absent from conversations started before it existed: an hour.
   */
  idleSeconds?: number;
}

/** An answer: its words, the figures behind them, and the API paths that give those figures. */
export interface ChatReply {
  text: string;
  data: Record<string, unknown> | null;
  sources: string[];
}

/** A question as the Update carries it. */
export interface ChatMessage {
  text: string;
  role: ChatRole;
  engine?: ChatEngine;
}

/**
 * A question: its words, the asker's role, under which it is answered, and the engine that answers it.
 * Stored in histories: never rename.
 */
export const chatMessageUpdate = defineUpdate<ChatReply, [ChatMessage]>('message');

/** A tool call the model proposed, and what running it gave. */
export interface ToolStep {
  callId: string;
  name: string;
  input: unknown;
  /** The answer's text and figures, or why the call was refused. */
  result: { text: string; data: object | null; sources: string[] } | { error: string };
}

/** What one call to the model gives: its final words, or the tool calls it wants run first. */
export type ModelStep = { kind: 'text'; text: string } | { kind: 'tools'; calls: Array<{ callId: string; name: string; input: unknown }> };

/** A turn of the built-in engine: the question and where it goes. */
export interface AnswerInput {
  organisationId: string;
  role: ChatRole;
  conversationId: string;
  /** The question's place in the conversation; its answer takes the next. */
  seq: number;
  text: string;
}

/** A turn of the model engine: the question, where it goes, and the tool calls made so far. */
export interface ModelStepInput {
  organisationId: string;
  conversationId: string;
  seq: number;
  text: string;
  steps: ToolStep[];
}

export interface ToolCallInput {
  organisationId: string;
  role: ChatRole;
  name: string;
  input: unknown;
}

export interface ModelTurnInput {
  organisationId: string;
  conversationId: string;
  seq: number;
  text: string;
  reply: ChatReply;
  intent: string;
}

export interface ChatbotActivities {
  /** A turn of the built-in engine, whole. */
  answerChatMessage(input: AnswerInput): Promise<ChatReply>;
  /** The model engine: one call to the model. */
  chatModelStep(input: ModelStepInput): Promise<ModelStep>;
  /** One tool call the model asked for, under the asker's role. */
  chatToolCall(input: ToolCallInput): Promise<ToolStep['result']>;
  /** The model engine's turn, stored. */
  recordChatTurn(input: ModelTurnInput): Promise<ChatReply>;
}
