import type { Config } from '../config';

/**
 * The task queues: the main one, and one each for webhook deliveries and chatbot conversations, so that
 * those many short-lived workflows neither crowd the operators' view nor wait behind billing work. One
 * worker process serves all three; a queue named twice is served once.
 */
export interface TaskQueues {
  main: string;
  webhooks: string;
  chatbot: string;
}

export type QueueRole = keyof TaskQueues;

export function taskQueuesOf(config: Pick<Config, 'TEMPORAL_TASK_QUEUE' | 'TEMPORAL_WEBHOOK_TASK_QUEUE' | 'TEMPORAL_CHATBOT_TASK_QUEUE'>): TaskQueues {
  const main = config.TEMPORAL_TASK_QUEUE;
  return {
    main,
    webhooks: config.TEMPORAL_WEBHOOK_TASK_QUEUE ?? `${main}-webhooks`,
    chatbot: config.TEMPORAL_CHATBOT_TASK_QUEUE ?? `${main}-chatbot`,
  };
}

/** Each queue once, the main one first. */
export function distinctQueues(queues: TaskQueues): string[] {
  return [...new Set([queues.main, queues.webhooks, queues.chatbot])];
}
