import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { AppError, ERROR_CODES, InvariantError } from '../domain/errors';

/** The parts of an e-mail a template gives: each a Handlebars template. */
export interface MailTemplate {
  subject: string;
  html: string;
  text: string | null;
}

export interface RenderedMail {
  subject: string;
  html: string;
  text: string | null;
}

type Part = keyof MailTemplate;

/**
 * What one template may take to render. Templates are written by organisations and integrators, so a
 * render is code someone else chose: it runs in a worker thread of its own, never on the event loop that
 * answers requests or runs activities.
 */
export interface TemplateBudget {
  /** Compiling and rendering the parts of one message; past it the thread is terminated. */
  timeoutMs: number;
  /** The rendered parts together, in UTF-8 bytes. */
  outputLimitBytes: number;
  /** The heap of a render thread (V8's old generation); a render that needs more ends its thread. */
  memoryLimitMb: number;
  /** Render threads at most: renders beyond these wait for one to be free. */
  threads: number;
}

export const DEFAULT_TEMPLATE_BUDGET: TemplateBudget = { timeoutMs: 500, outputLimitBytes: 1024 * 1024, memoryLimitMb: 64, threads: 2 };

export interface TemplateRenderer {
  /**
   * Compiles and renders each part given once without variables, so that a template with a syntax
   * error, an unknown helper or a partial is refused when it is saved rather than when a message is sent:
   * a validation error naming the part (`body.html`) and Handlebars' description of the fault.
   */
  check(template: Partial<MailTemplate>): Promise<void>;
  /**
   * Renders the three parts with the same variables. A variable that is not given renders as nothing; a
   * template that still fails with these variables is a validation error naming the fault. The subject is
   * folded onto one line.
   */
  render(template: MailTemplate, variables: Record<string, unknown>): Promise<RenderedMail>;
  /** Ends the render threads; renders asked for afterwards, or still waiting, are refused. */
  close(): Promise<void>;
}

/**
 * The thread's code: plain JavaScript beside this file, in src/mail/ as in dist/src/mail/ (the build copies
 * it), so that it loads the same way under tsx, jest and the compiled build.
 */
export const RENDER_WORKER_FILE = path.join(__dirname, 'render-worker.js');

type Limit = 'time' | 'output' | 'memory';

/**
 * A template past one of the limits of its budget: 422, naming the limit and the part it was at (as the
 * path too when the template is checked on saving, where the body holds the part).
 */
function overBudget(budget: TemplateBudget, limit: Limit, part: Part | undefined, op: Job['op']): AppError {
  const what = part ?? 'template';
  const message =
    limit === 'time'
      ? `the ${what} did not render within the time limit of ${budget.timeoutMs} ms`
      : limit === 'output'
        ? `the ${what} renders past the output limit of ${budget.outputLimitBytes} bytes`
        : `the ${what} needs more than the memory limit of ${budget.memoryLimitMb} MB to render`;
  return new AppError('unprocessable', 'Template over budget', [{ code: ERROR_CODES.unprocessable, ...(op === 'check' && part ? { path: `body.${part}` } : {}), message }]);
}

/** Whether an error is a template over its budget (as the renderer throws it). */
export const isOverBudget = (error: unknown): error is AppError => error instanceof AppError && error.kind === 'unprocessable';

type Outcome =
  | { ok: true; parts?: RenderedMail }
  | { invalid: { part: Part; reason: string } }
  | { failed: { part: Part; reason: string } }
  | { output: { part: Part } };

interface Job {
  op: 'check' | 'render';
  template: Partial<MailTemplate>;
  variables?: Record<string, unknown>;
  resolve: (outcome: Outcome) => void;
  reject: (error: unknown) => void;
}

interface Running {
  id: number;
  job: Job;
  /** The part the thread said it started on. */
  part?: Part;
  timer: NodeJS.Timeout;
}

interface Thread {
  worker: Worker;
  ready: boolean;
  running?: Running;
}

type FromThread = { ready: true } | { id: number; part: Part } | { id: number; result: Outcome };

/**
 * A small pool of render threads, started when first needed and kept for the next render (an idle thread
 * does not keep the process alive). Each thread renders one message at a time; a render past the time
 * limit has its thread terminated (and replaced for the next render), one past the memory limit ends its
 * thread itself. The event loop of the caller only posts the template and waits.
 */
export function createTemplateRenderer(budget: TemplateBudget = DEFAULT_TEMPLATE_BUDGET): TemplateRenderer {
  const threads = new Set<Thread>();
  const queue: Job[] = [];
  let nextId = 0;
  let closed = false;

  function refuseQueued(error: Error): void {
    for (const job of queue.splice(0)) job.reject(error);
  }

  function finish(thread: Thread): Running | undefined {
    const running = thread.running;
    if (running) clearTimeout(running.timer);
    thread.running = undefined;
    return running;
  }

  function retire(thread: Thread): void {
    threads.delete(thread);
    finish(thread);
    void thread.worker.terminate();
  }

  function spawn(): void {
    const worker = new Worker(RENDER_WORKER_FILE, {
      workerData: { outputLimitBytes: budget.outputLimitBytes },
      // No TypeScript loader (the file is JavaScript) and none of the process's settings or secrets.
      execArgv: [],
      env: {},
      resourceLimits: { maxOldGenerationSizeMb: budget.memoryLimitMb },
    });
    const thread: Thread = { worker, ready: false };
    threads.add(thread);
    worker.on('message', (message: FromThread) => {
      if ('ready' in message) {
        thread.ready = true;
        worker.unref();
        pump();
        return;
      }
      const running = thread.running;
      if (!running || running.id !== message.id) return;
      if ('part' in message) {
        running.part = message.part;
        return;
      }
      finish(thread);
      worker.unref();
      running.job.resolve(message.result);
      pump();
    });
    worker.on('error', (error: Error & { code?: string }) => {
      const running = finish(thread);
      threads.delete(thread);
      if (running) {
        running.job.reject(error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? overBudget(budget, 'memory', running.part, running.job.op) : error);
      } else if (!thread.ready) {
        // A thread that cannot start: the next would not either, so the waiting renders fail now.
        refuseQueued(new Error(`the template render thread did not start: ${error.message}`));
      }
      pump();
    });
    worker.on('exit', () => {
      if (!threads.has(thread)) return;
      threads.delete(thread);
      const running = finish(thread);
      running?.job.reject(new Error('the template render thread stopped'));
      if (!thread.ready) refuseQueued(new Error('the template render thread did not start'));
      pump();
    });
  }

  function dispatch(thread: Thread, job: Job): void {
    const id = (nextId += 1);
    const timer = setTimeout(() => {
      const running = thread.running;
      if (!running || running.id !== id) return;
      retire(thread);
      job.reject(overBudget(budget, 'time', running.part, job.op));
      pump();
    }, budget.timeoutMs);
    thread.running = { id, job, timer };
    thread.worker.ref();
    try {
      thread.worker.postMessage({ id, op: job.op, template: job.template, variables: job.variables });
    } catch (error) {
      // Variables that are not plain data (a function): nothing was sent, and the thread stays free.
      finish(thread);
      thread.worker.unref();
      job.reject(error);
    }
  }

  function pump(): void {
    if (closed) return;
    for (const thread of threads) {
      if (queue.length === 0) return;
      if (thread.ready && !thread.running) dispatch(thread, queue.shift()!);
    }
    const starting = [...threads].filter((thread) => !thread.ready).length;
    for (let more = Math.min(queue.length - starting, budget.threads - threads.size); more > 0; more -= 1) spawn();
  }

  function run(job: Omit<Job, 'resolve' | 'reject'>): Promise<Outcome> {
    if (closed) return Promise.reject(new Error('the template renderer is closed'));
    return new Promise<Outcome>((resolve, reject) => {
      queue.push({ ...job, resolve, reject });
      pump();
    });
  }

  return {
    async check(template) {
      const outcome = await run({ op: 'check', template });
      if ('invalid' in outcome) throw AppError.validation(`The ${outcome.invalid.part} is not a valid template: ${outcome.invalid.reason}`, `body.${outcome.invalid.part}`);
      if ('output' in outcome) throw overBudget(budget, 'output', outcome.output.part, 'check');
    },

    async render(template, variables) {
      const outcome = await run({ op: 'render', template, variables }).catch((error: unknown) => {
        throw isOverBudget(error) ? error : new Error(`the template could not be rendered: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      });
      if ('failed' in outcome) throw AppError.validation(`The template could not be rendered: ${outcome.failed.reason}`);
      if ('output' in outcome) throw overBudget(budget, 'output', outcome.output.part, 'render');
      if ('invalid' in outcome || !outcome.parts) throw new InvariantError('the render thread answered a render with no parts');
      return outcome.parts;
    },

    async close() {
      closed = true;
      refuseQueued(new Error('the template renderer is closed'));
      const all = [...threads];
      threads.clear();
      for (const thread of all) finish(thread)?.job.reject(new Error('the template renderer is closed'));
      await Promise.all(all.map((thread) => thread.worker.terminate()));
    },
  };
}

/** The budget the configuration sets. */
export function templateBudgetFrom(config: { TEMPLATE_RENDER_TIMEOUT_MS: number; TEMPLATE_OUTPUT_LIMIT_BYTES: number; TEMPLATE_RENDER_MEMORY_MB: number; TEMPLATE_RENDER_THREADS: number }): TemplateBudget {
  return {
    timeoutMs: config.TEMPLATE_RENDER_TIMEOUT_MS,
    outputLimitBytes: config.TEMPLATE_OUTPUT_LIMIT_BYTES,
    memoryLimitMb: config.TEMPLATE_RENDER_MEMORY_MB,
    threads: config.TEMPLATE_RENDER_THREADS,
  };
}
