'use strict';
/**
 * The thread that compiles and renders e-mail templates: the only code that runs a Handlebars template.
 * `src/mail/templating.ts` starts it, hands it one job at a time and terminates it when a job runs past
 * the time limit; the thread's heap is capped by the `resourceLimits` it is started with.
 *
 * Plain CommonJS on purpose: it is loaded as it is by Node, whether the process runs from the TypeScript
 * sources (tsx, jest with @swc/jest) or from dist/ (scripts/build.ts copies this file beside the compiled
 * templating.js). It needs nothing but `handlebars`.
 *
 * Messages in:  {id, op: 'check', template: {subject?, html?, text?}}
 *               {id, op: 'render', template: {subject, html, text}, variables}
 * Messages out: {ready: true} once, when Handlebars is loaded
 *               {id, part}                         the part it starts on (names the part a timeout stops)
 *               {id, result: {ok: true, parts?}}   check: nothing; render: {subject, html, text}
 *               {id, result: {invalid: {part, reason}}}   check: a part that does not compile or render
 *               {id, result: {failed: {part, reason}}}    render: a part that fails with these variables
 *               {id, result: {output: {part}}}     render: the parts so far are past the output limit
 */
const { Buffer } = require('node:buffer');
const { parentPort, workerData } = require('node:worker_threads');
const Handlebars = require('handlebars');

/**
 * An isolated Handlebars: no helper or partial registered by any other code reaches it, and it keeps
 * Handlebars' default refusal of prototype properties (`{{constructor}}` renders nothing).
 */
const handlebars = Handlebars.create();
// A template writes to the message, never to the log.
handlebars.unregisterHelper('log');

/**
 * The subject and the text part are plain text: HTML escaping there would show `&amp;` to the reader.
 * The HTML part escapes every `{{value}}`; `{{{value}}}` inserts it as it is, which only a template's
 * author can ask for. Only Handlebars' own helpers (if, unless, each, with, lookup): a call of any other
 * is refused when the template is saved, instead of failing when a message is sent.
 */
const PLAIN = { noEscape: true, strict: false, knownHelpersOnly: true };
const HTML = { noEscape: false, strict: false, knownHelpersOnly: true };
const PARTS = ['subject', 'html', 'text'];

const { outputLimitBytes } = workerData;

const reasonOf = (error) => (error instanceof Error ? error.message.split('\n').filter(Boolean).slice(0, 3).join(' ') : String(error));

/** A string past the longest V8 can hold: the output was far over any limit. */
const tooLong = (error) => error instanceof RangeError && /Invalid string length/.test(error.message);

function compileAndRun(part, source, variables) {
  return handlebars.compile(source, part === 'html' ? HTML : PLAIN)(variables);
}

/**
 * Compiles and renders each part given once without variables, so that a template with a syntax error,
 * an unknown helper or a partial, or one past the output limit with no variables at all, is refused when it
 * is saved rather than when a message is sent.
 */
function check(id, template) {
  let bytes = 0;
  for (const part of PARTS) {
    const source = template[part];
    if (source === undefined || source === null) continue;
    parentPort.postMessage({ id, part });
    try {
      bytes += Buffer.byteLength(compileAndRun(part, source, {}), 'utf8');
    } catch (error) {
      if (tooLong(error)) return { output: { part } };
      return { invalid: { part, reason: reasonOf(error) } };
    }
    // Past the limit without a single variable: no message from it could be sent.
    if (bytes > outputLimitBytes) return { output: { part } };
  }
  return { ok: true };
}

/**
 * Renders the three parts with the same variables; a variable that is not given renders as nothing. The
 * subject is folded onto one line. The parts together, in UTF-8, stay within the output limit.
 */
function render(id, template, variables) {
  const parts = {};
  let bytes = 0;
  for (const part of PARTS) {
    const source = template[part];
    if (source === null) {
      parts[part] = null;
      continue;
    }
    parentPort.postMessage({ id, part });
    let rendered;
    try {
      rendered = compileAndRun(part, source, variables);
    } catch (error) {
      if (tooLong(error)) return { output: { part } };
      return { failed: { part, reason: reasonOf(error) } };
    }
    if (part === 'subject') rendered = rendered.replace(/\s+/g, ' ').trim();
    bytes += Buffer.byteLength(rendered, 'utf8');
    if (bytes > outputLimitBytes) return { output: { part } };
    parts[part] = rendered;
  }
  return { ok: true, parts };
}

parentPort.on('message', (job) => {
  const result = job.op === 'check' ? check(job.id, job.template) : render(job.id, job.template, job.variables);
  parentPort.postMessage({ id: job.id, result });
});
parentPort.postMessage({ ready: true });
