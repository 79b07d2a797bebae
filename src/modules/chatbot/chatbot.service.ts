import { orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import type { AuthContext } from '../../http/route';
import type { WorkflowServiceDeps } from '../../temporal/client';
import { chatMessageUpdate, type ChatEngine } from '../../../workflows/chat.types';
import { chatWorkflowId, searchAttributes } from '../../../workflows/ids';
import { createChatbotRepository } from './chatbot.repository';
import type { ChatMessage, ChatReply, Conversation } from './chatbot.schemas';

/** The API's side of the chatbot: a question goes to its conversation's workflow, which answers it. */
export function createChatbotService(deps: WorkflowServiceDeps & { engine: ChatEngine; idleSeconds: number }) {
  const conversations = createChatbotRepository(deps.db);
  const { workflows } = deps.temporal;

  async function requireConversation(organisationId: string, id: string): Promise<Conversation> {
    return orNotFound(await conversations.findConversation(organisationId, id), 'Conversation');
  }

  return {
    /**
     * Asks the question in the conversation (a new one without `conversationId`) and waits for its answer.
     * With an idempotency key, the question is one Update of that id: a retry (after a 503, say) waits for
     * the same answer instead of asking again.
     */
    async send(auth: AuthContext, body: { conversationId?: string; text: string }, idempotencyKey?: string): Promise<{ conversationId: string; reply: ChatReply }> {
      const conversation = body.conversationId
        ? await requireConversation(auth.organisationId, body.conversationId)
        : await conversations.createConversation(auth.organisationId, auth.subjectId, body.text.slice(0, 80), idempotencyKey);
      const startWorkflowOperation = workflows.withStart('chatConversationWorkflow', {
        workflowId: chatWorkflowId(conversation.id),
        // Picked up again after a pause (the workflow ends when idle): the turns Postgres holds.
        args: [{ organisationId: auth.organisationId, conversationId: conversation.id, turns: await conversations.turnsOf(conversation.id), idleSeconds: deps.idleSeconds }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        ...searchAttributes({ organisationId: auth.organisationId }),
      });
      const updateId = idempotencyKey ? `question:${auth.subjectId}:${idempotencyKey}` : undefined;
      const reply = await deps.temporal.bounded(
        () => workflows.executeUpdateWithStart(chatMessageUpdate, { args: [{ text: body.text, role: auth.role, ...(deps.engine === 'model' ? { engine: 'model' as const } : {}) }], startWorkflowOperation, ...(updateId ? { updateId } : {}) }),
        'update',
      );
      return { conversationId: conversation.id, reply };
    },

    async conversations(organisationId: string, paging: PageQuery): Promise<Page<Conversation>> {
      return conversations.conversations(organisationId, paging);
    },

    async messages(organisationId: string, conversationId: string, paging: PageQuery): Promise<Page<ChatMessage>> {
      await requireConversation(organisationId, conversationId);
      return conversations.messages(organisationId, conversationId, paging);
    },
  };
}

export type ChatbotService = ReturnType<typeof createChatbotService>;
