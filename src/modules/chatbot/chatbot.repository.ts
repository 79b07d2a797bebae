import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { ChatMessage, ChatReply, Conversation } from './chatbot.schemas';

interface ConversationRow {
  id: string;
  organisation_id: string;
  started_by: string;
  title: string;
  messages: number;
  created_at: Date;
  updated_at: Date;
}

interface MessageRow {
  id: string;
  organisation_id: string;
  conversation_id: string;
  seq: number;
  role: 'user' | 'assistant';
  text: string;
  data: Record<string, unknown> | null;
  sources: string[];
  intent: string | null;
  created_at: Date;
}

const toConversation = (row: ConversationRow): Conversation => ({
  id: row.id,
  title: row.title,
  messages: row.messages,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const toMessage = (row: MessageRow): ChatMessage => ({
  id: row.id,
  seq: row.seq,
  role: row.role,
  text: row.text,
  data: row.data,
  sources: row.sources,
  intent: row.intent,
  createdAt: row.created_at.toISOString(),
});

/** Chatbot conversations and their messages, per organisation. `db` may be a transaction. */
export function createChatbotRepository(db: Knex) {
  return {
    /** A new conversation; with `startKey`, the one a request of that key already started, if any. */
    async createConversation(organisationId: string, startedBy: string, title: string, startKey?: string): Promise<Conversation> {
      const key = { organisation_id: organisationId, started_by: startedBy, start_key: startKey ?? null };
      const [row] = await db('chatbot_conversations').insert({ id: newId('chat'), ...key, title }).onConflict(['organisation_id', 'started_by', 'start_key']).ignore().returning<ConversationRow[]>('*');
      // Nothing inserted: a request with the same key started it before.
      return toConversation(row ?? (await db<ConversationRow>('chatbot_conversations').where(key).first())!);
    },

    async findConversation(organisationId: string, id: string): Promise<Conversation | undefined> {
      const row = await db<ConversationRow>('chatbot_conversations').where({ organisation_id: organisationId, id }).first();
      return row ? toConversation(row) : undefined;
    },

    /** The conversations that hold a turn: a first question that got no answer (a 503) lists nothing. */
    async conversations(organisationId: string, paging: PageQuery): Promise<Page<Conversation>> {
      return paginate<ConversationRow, Conversation>(db('chatbot_conversations').where({ organisation_id: organisationId }).where('messages', '>', 0).select('*'), paging, {
        searchColumns: ['title'],
        orderBy: [
          { column: 'updated_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ],
        map: toConversation,
      });
    },

    async messages(organisationId: string, conversationId: string, paging: PageQuery): Promise<Page<ChatMessage>> {
      return paginate<MessageRow, ChatMessage>(db('chatbot_messages').where({ organisation_id: organisationId, conversation_id: conversationId }).select('*'), paging, {
        searchColumns: ['text'],
        orderBy: [{ column: 'seq', order: 'asc' }],
        map: toMessage,
      });
    },

    /** The conversation's last turns before `seq`, oldest first: what a language model reads for context. */
    async pastTurns(conversationId: string, seq: number, turns: number): Promise<Array<{ question: string; answer: string }>> {
      const rows = await db<MessageRow>('chatbot_messages').where({ conversation_id: conversationId }).where('seq', '<', seq).orderBy('seq', 'desc').limit(turns * 2).select('seq', 'role', 'text');
      const bySeq = new Map(rows.map((row) => [row.seq, row]));
      const past: Array<{ question: string; answer: string }> = [];
      for (const row of [...rows].reverse()) {
        const answer = bySeq.get(row.seq + 1);
        if (row.role === 'user' && answer) past.push({ question: row.text, answer: answer.text });
      }
      return past;
    },

    /** The answer stored at `seq`, if a turn already wrote it (a retried step). */
    async answerAt(conversationId: string, seq: number): Promise<(ChatReply & { intent: string | null }) | undefined> {
      const row = await db<MessageRow>('chatbot_messages').where({ conversation_id: conversationId, seq, role: 'assistant' }).first();
      return row ? { text: row.text, data: row.data, sources: row.sources, intent: row.intent } : undefined;
    },

    /** The turns a conversation has taken: its last answer's place, halved. */
    async turnsOf(conversationId: string): Promise<number> {
      const row = await db('chatbot_messages').where({ conversation_id: conversationId }).max<{ last: number | null }>('seq as last').first();
      return Math.floor((row?.last ?? 0) / 2);
    },

    /** One turn: the question at `seq` and its answer at `seq + 1`, written once, with the conversation's count, in one transaction. */
    async recordTurn(organisationId: string, conversationId: string, seq: number, question: string, answer: ChatReply & { intent: string }): Promise<void> {
      await db.transaction(async (trx) => {
        await trx('chatbot_conversations').where({ id: conversationId }).forUpdate().first('id');
        const inserted = await trx('chatbot_messages')
          .insert([
            { id: newId('msg'), organisation_id: organisationId, conversation_id: conversationId, seq, role: 'user', text: question, data: null, sources: JSON.stringify([]), intent: null },
            {
              id: newId('msg'),
              organisation_id: organisationId,
              conversation_id: conversationId,
              seq: seq + 1,
              role: 'assistant',
              text: answer.text,
              data: answer.data === null ? null : JSON.stringify(answer.data),
              sources: JSON.stringify(answer.sources),
              intent: answer.intent,
            },
          ])
          .onConflict(['conversation_id', 'seq'])
          .ignore()
          .returning('id');
        if (inserted.length > 0) await trx('chatbot_conversations').where({ id: conversationId }).update({ messages: trx.raw('messages + ?', [inserted.length]), updated_at: trx.fn.now() });
      });
    },
  };
}

export type ChatbotRepository = ReturnType<typeof createChatbotRepository>;
