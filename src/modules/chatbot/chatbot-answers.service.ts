import type { Knex } from 'knex';
import { deterministicDatabaseError } from '../../db/errors';
import { AppError, type ErrorKind } from '../../domain/errors';
import type { ContractService } from '../contracts';
import type { CustomerService, EntityService } from '../customers';
import type { MeterService } from '../meters';
import { organisationToday } from '../organisation-settings';
import { EXAMPLES, readQuestion, type Reading } from './builtin-engine';
import type { Directory } from './mentions';
import { candidatesReply, CHATBOT_QUERIES, runQuery, type ChatAnswer, type ChatbotReads } from './chatbot-queries';
import { callModel, type ModelSettings, type ModelStep, type ToolStep } from './model-engine';
import { createChatbotRepository } from './chatbot.repository';
import type { ChatReply } from './chatbot.schemas';
import type { AnswerInput, ModelStepInput, ModelTurnInput, ToolCallInput } from '../../../workflows/chat.types';

/** Refusals a question's answer tells in words; any other failure is a fault, retried. */
const ANSWERED_IN_WORDS = new Set<ErrorKind>(['forbidden', 'not_found', 'conflict', 'validation', 'fx_rate_missing']);

/** Where the engine finds the organisation's names: the same lists the API serves. */
export type { AnswerInput, ModelStepInput, ModelTurnInput, ToolCallInput } from '../../../workflows/chat.types';

export interface DirectoryReads {
  customers: Pick<CustomerService, 'list'>;
  entities: Pick<EntityService, 'list'>;
  meters: Pick<MeterService, 'list'>;
  contracts: Pick<ContractService, 'list'>;
}





/** Names beyond this many of a kind are not recognised (the lists are read 100 at a time). */
const NAMES_READ = 1000;

/** The names of one kind, and whether they are all there. */
async function allOf<T>(read: (page: number) => Promise<{ items: T[]; total: number }>): Promise<{ items: T[]; complete: boolean }> {
  const items: T[] = [];
  let total = 0;
  for (let page = 1; items.length < NAMES_READ; page += 1) {
    const next = await read(page);
    items.push(...next.items);
    total = next.total;
    if (next.items.length === 0 || items.length >= next.total) break;
  }
  return { items, complete: items.length >= total };
}

async function directoryOf(reads: DirectoryReads, organisationId: string): Promise<Directory> {
  const paging = (page: number) => ({ page, limit: 100 });
  const [customers, entities, meters, contracts] = await Promise.all([
    allOf((page) => reads.customers.list(organisationId, paging(page))),
    allOf((page) => reads.entities.list(organisationId, paging(page), { type: 'customer' })),
    allOf((page) => reads.meters.list(organisationId, paging(page))),
    allOf((page) => reads.contracts.list(organisationId, {}, paging(page))),
  ]);
  return {
    customers: customers.items.map((customer) => ({ id: customer.id, name: customer.name })),
    entities: entities.items.map((entity) => ({ id: entity.id, name: entity.name, customerId: entity.customerId ?? null })),
    meters: meters.items.map((meter) => ({ id: meter.id, name: meter.name, metric: meter.metric, groupBy: meter.groupBy })),
    contracts: contracts.items.map((contract) => ({ id: contract.id, name: contract.name ?? `contract ${contract.id}`, customerId: contract.customerId })),
    complete: [customers, entities, meters, contracts].every((kind) => kind.complete),
  };
}

function helpText(missing?: string): string {
  const lead = missing ? `I could not tell ${missing} from the question.` : 'I did not understand the question.';
  return `${lead} I answer questions such as: ${EXAMPLES.map((example) => `"${example}"`).join(', ')}.`;
}

/** What the built-in engine answers: a query's answer, the candidates of an ambiguous name, or help. */
async function answerOf(reads: ChatbotReads, input: AnswerInput, reading: Reading, directory: Directory, today: string): Promise<ChatReply & { intent: string }> {
  if (reading.kind === 'help') return { text: helpText(reading.missing), data: { examples: [...EXAMPLES] }, sources: [], intent: 'help' };
  if (reading.kind === 'candidates') {
    const reply = candidatesReply(reading.what, reading.candidates);
    return { text: reply.text, data: (reply.data as Record<string, unknown> | null) ?? null, sources: reply.sources, intent: 'candidates' };
  }
  try {
    const answer: ChatAnswer = await runQuery(reads, { organisationId: input.organisationId, role: input.role, today }, reading.name, reading.input, directory);
    return { text: answer.text, data: (answer.data as Record<string, unknown> | null) ?? null, sources: answer.sources, intent: reading.name };
  } catch (error) {
    // What the caller may not see, what is not there, or a value Postgres cannot hold is answered in words; a fault is retried.
    const known = error instanceof AppError ? error : deterministicDatabaseError(error);
    if (known && ANSWERED_IN_WORDS.has(known.kind)) {
      const why = known.kind === 'forbidden' ? 'Your role may not read that.' : (known.items[0]?.message ?? known.message);
      return { text: why, data: null, sources: [], intent: reading.name };
    }
    throw error;
  }
}

/**
 * The worker's side of the chatbot: one turn of a conversation, answered by the built-in engine under the
 * asker's organisation and role, and stored with its question once. A retried turn answers what it stored.
 */
export function createChatbotAnswerService(deps: { db: Knex; reads: ChatbotReads & DirectoryReads; model?: ModelSettings }) {
  /** A turn's question and answer, stored once: what is stored is the answer, whichever attempt wrote it. */
  async function storeTurn(input: ModelTurnInput): Promise<ChatReply> {
    const repository = createChatbotRepository(deps.db);
    await repository.recordTurn(input.organisationId, input.conversationId, input.seq, input.text, { ...input.reply, intent: input.intent });
    const { intent: _intent, ...reply } = (await repository.answerAt(input.conversationId, input.seq + 1)) ?? { ...input.reply, intent: input.intent };
    return reply;
  }

  return {
    /** One call to the language model, with the conversation's last turns and this turn's tool results. */
    async modelStep(input: ModelStepInput, abortSignal?: AbortSignal): Promise<ModelStep> {
      if (!deps.model) throw AppError.conflict('the chatbot asks a language model, but this worker has none configured (CHATBOT_LLM_BASE_URL, CHATBOT_LLM_MODEL)');
      const past = await createChatbotRepository(deps.db).pastTurns(input.conversationId, input.seq, 10);
      return callModel(deps.model, past, input.text, input.steps, await organisationToday(deps.db, input.organisationId), abortSignal);
    },

    /**
     * A tool call the model proposed, run as the built-in engine runs a question: only the chatbot's
     * read-only queries, in the asker's organisation and with the asker's role. Anything else is refused,
     * and the refusal goes back to the model as the call's result.
     */
    async runTool(input: ToolCallInput): Promise<ToolStep['result']> {
      if (!CHATBOT_QUERIES.some((query) => query.name === input.name)) return { error: `${input.name} is not one of the chatbot's questions: it only reads, with the tools it was given` };
      try {
        const answer = await runQuery(deps.reads, { organisationId: input.organisationId, role: input.role, today: await organisationToday(deps.db, input.organisationId) }, input.name, input.input, await directoryOf(deps.reads, input.organisationId));
        return { text: answer.text, data: answer.data, sources: answer.sources };
      } catch (error) {
        const known = error instanceof AppError ? error : deterministicDatabaseError(error);
        if (known && ANSWERED_IN_WORDS.has(known.kind)) {
          return { error: known.kind === 'forbidden' ? 'Your role may not read that.' : (known.items[0]?.message ?? known.message) };
        }
        throw error;
      }
    },

    /** Stores a model turn's question and answer once; a retry answers what was stored. */
    recordModelTurn: storeTurn,

    async answer(input: AnswerInput): Promise<ChatReply> {
      const stored = await createChatbotRepository(deps.db).answerAt(input.conversationId, input.seq + 1);
      if (stored) return { text: stored.text, data: stored.data, sources: stored.sources };
      const directory = await directoryOf(deps.reads, input.organisationId);
      const today = await organisationToday(deps.db, input.organisationId);
      let reading: Reading;
      try {
        reading = readQuestion(input.text, directory, today);
      } catch (error) {
        // A date no calendar holds (a year past 9999, say): the question cannot be read. Anything else is a fault.
        if (!(error instanceof RangeError || error instanceof AppError)) throw error;
        reading = { kind: 'help', missing: 'the dates' };
      }
      const { intent, ...reply } = await answerOf(deps.reads, input, reading, directory, today);
      return storeTurn({ ...input, reply, intent });
    },
  };
}

export type ChatbotAnswerService = ReturnType<typeof createChatbotAnswerService>;
