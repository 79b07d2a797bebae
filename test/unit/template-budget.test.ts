import { ApplicationFailure } from '@temporalio/common';
import Handlebars from 'handlebars';
import { toActivityFailure } from '../../activities/adapter';
import { AppError, BUSINESS_FAILURE_TYPES, ERROR_CODES } from '../../src/domain/errors';
import { createTemplateRenderer, DEFAULT_TEMPLATE_BUDGET, type MailTemplate, type TemplateBudget, type TemplateRenderer } from '../../src/mail/templating';
import { BUILT_IN_TEMPLATES } from '../../src/modules/email-templates/built-in-templates';

const renderers: TemplateRenderer[] = [];
const rendererWith = (budget: Partial<TemplateBudget> = {}) => {
  const renderer = createTemplateRenderer({ ...DEFAULT_TEMPLATE_BUDGET, ...budget });
  renderers.push(renderer);
  return renderer;
};
afterAll(() => Promise.all(renderers.map((renderer) => renderer.close())));

const mail = (html: string, subject = 'Hi', text: string | null = null): MailTemplate => ({ subject, html, text });
/** The template of the security review: 20,000 × 20,000 iterations, 40 KB of JSON. */
const NESTED_LOOPS = mail('{{#each a}}{{#each @root.a}}{{/each}}{{/each}}');
const nestedVariables = { a: new Array<number>(20_000).fill(0) };

async function failureOf(work: Promise<unknown>): Promise<AppError> {
  const error = await work.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

/**
 * The largest gap between ticks of a 10 ms interval while `work` runs: how long this thread's event loop
 * was held at once.
 */
async function longestStall<T>(work: () => Promise<T>): Promise<{ result: T; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 10);
  try {
    const result = await work();
    return { result, stallMs };
  } finally {
    clearInterval(ticker);
  }
}

describe('the time limit', () => {
  jest.setTimeout(30_000);

  it('when a template loops past the time limit, then its thread is terminated and the render fails with 422 naming the limit, while this event loop stays free', async () => {
    const renderer = rendererWith({ timeoutMs: 1000 });
    await renderer.render(mail('warm'), {});

    const started = performance.now();
    const { result: error, stallMs } = await longestStall(() => failureOf(renderer.render(NESTED_LOOPS, nestedVariables)));
    const elapsed = performance.now() - started;

    expect(error).toMatchObject({ kind: 'unprocessable', status: 422, message: 'Template over budget' });
    expect(error.items).toEqual([{ code: ERROR_CODES.unprocessable, message: 'the html did not render within the time limit of 1000 ms' }]);
    expect(ERROR_CODES.unprocessable).toBe(1011);
    expect(elapsed).toBeGreaterThanOrEqual(995);
    expect(elapsed).toBeLessThan(3_000);
    // The render ran on another thread: this one only waited (what it was held at most is scheduling
    // on a busy machine, far from the second the render took).
    expect(stallMs).toBeLessThan(500);
  });

  it('when a render was terminated, then the next renders go on in a new thread, with the same results', async () => {
    const renderer = rendererWith({ timeoutMs: 200, threads: 1 });
    await failureOf(renderer.render(NESTED_LOOPS, nestedVariables));
    await expect(renderer.render(mail('<p>{{name}}</p>', 'Hi {{name}}'), { name: 'Ann & Bob' })).resolves.toEqual({ subject: 'Hi Ann & Bob', html: '<p>Ann &amp; Bob</p>', text: null });
  });

  it('when it happens in an activity, then the activity fails for good: a non-retryable failure of its own type, with the limit in its details', async () => {
    // A limit the subject's render never reaches on a loaded machine, so that the html is the part named.
    const renderer = rendererWith({ timeoutMs: 600 });
    const failure = toActivityFailure(await failureOf(renderer.render(NESTED_LOOPS, nestedVariables)));
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'unprocessable', nonRetryable: true, details: [[{ code: 1011, message: 'the html did not render within the time limit of 600 ms' }]] });
    expect(BUSINESS_FAILURE_TYPES).toContain('unprocessable');
  });

  it('when several renders are asked for at once, then they share the threads and each gets its own answer', async () => {
    const renderer = rendererWith({ timeoutMs: 300, threads: 2 });
    const names = Array.from({ length: 12 }, (_, index) => `name ${index}`);
    const hostile = failureOf(renderer.render(NESTED_LOOPS, nestedVariables));
    const rendered = await Promise.all(names.map((name) => renderer.render(mail('<b>{{name}}</b>'), { name })));
    expect(rendered.map((message) => message.html)).toEqual(names.map((name) => `<b>${name}</b>`));
    expect((await hostile).items[0]!.message).toContain('time limit of 300 ms');
  });
});

describe('the output limit', () => {
  it('when the parts together render past the output limit, counted in UTF-8 bytes, then the render fails with 422 naming the limit and the part', async () => {
    const renderer = rendererWith({ outputLimitBytes: 4096 });
    const error = await failureOf(renderer.render(mail('{{#each rows}}{{this}}{{/each}}'), { rows: new Array(100).fill('x'.repeat(50)) }));
    expect(error).toMatchObject({ kind: 'unprocessable', status: 422 });
    expect(error.items).toEqual([{ code: 1011, message: 'the html renders past the output limit of 4096 bytes' }]);

    // 2,000 two-byte characters are 4,000 bytes: with a subject of 96 bytes, exactly at the limit.
    const atLimit = await renderer.render(mail('{{e}}', '{{s}}'), { e: 'é'.repeat(2000), s: 's'.repeat(96) });
    expect(atLimit.html).toHaveLength(2000);
    const text = await failureOf(renderer.render(mail('{{e}}', '{{s}}', '!'), { e: 'é'.repeat(2000), s: 's'.repeat(96) }));
    expect(text.items[0]!.message).toBe('the text renders past the output limit of 4096 bytes');
  });

  it('when the output would be longer than a string can be, then it is the output limit that refuses it, not a fault', async () => {
    const renderer = rendererWith();
    const error = await failureOf(renderer.render(mail('{{#each a}}{{#each @root.a}}{{{@root.big}}}{{/each}}{{/each}}'), { a: new Array(20_000).fill(0), big: 'y'.repeat(50_000) }));
    expect(error.items[0]!.message).toBe('the html renders past the output limit of 1048576 bytes');
  });

  it('when a template saved is already past the output limit without variables, then the check refuses it with the part as path', async () => {
    const renderer = rendererWith({ outputLimitBytes: 4096 });
    const error = await failureOf(renderer.check({ subject: 'Hi', html: 'x'.repeat(5000) }));
    expect(error.items).toEqual([{ code: 1011, path: 'body.html', message: 'the html renders past the output limit of 4096 bytes' }]);
  });
});

describe('the memory limit', () => {
  jest.setTimeout(30_000);

  it("when a render needs more than its thread's heap, then the thread ends and the render fails with 422 naming the limit; the process goes on", async () => {
    const renderer = rendererWith({ timeoutMs: 20_000, memoryLimitMb: 16, threads: 1 });
    const error = await failureOf(renderer.render(mail('{{#each a}}{{#each @root.a}}some text, again and again{{/each}}{{/each}}'), { a: new Array(6000).fill(0) }));
    expect(error.items).toEqual([{ code: 1011, message: 'the html needs more than the memory limit of 16 MB to render' }]);
    await expect(renderer.render(mail('ok'), {})).resolves.toMatchObject({ html: 'ok' });
  });
});

describe('normal templates', () => {
  // The renderer as it was before templates had a budget: Handlebars on the calling thread.
  const reference = Handlebars.create();
  reference.unregisterHelper('log');
  const inThread = (template: MailTemplate, variables: Record<string, unknown>) => {
    const options = (html: boolean) => ({ noEscape: !html, strict: false, knownHelpersOnly: true });
    return {
      subject: reference.compile(template.subject, options(false))(variables).replace(/\s+/g, ' ').trim(),
      html: reference.compile(template.html, options(true))(variables),
      text: template.text === null ? null : reference.compile(template.text, options(false))(variables),
    };
  };

  const invoiceVariables = {
    invoice: { number: 'INV-000007', status: 'raised', date: '2026-11-01', dueDate: '2026-12-01', periodFrom: '2026-11-01', periodTo: '2026-11-30', total: '119.00', currency: 'EUR', amountDue: '19.00', partlySettled: true },
    seller: { name: 'Acme & Sons <Ltd>', taxId: null },
    customer: { name: 'Zoë "Z" Müller', taxId: 'DE1' },
    daysOverdue: 3,
    daysAfterDue: 1,
  };
  const cases: Array<[string, MailTemplate, Record<string, unknown>]> = [
    ['the built-in invoice message', BUILT_IN_TEMPLATES.invoice, invoiceVariables],
    ['the built-in reminder', BUILT_IN_TEMPLATES.reminder, invoiceVariables],
    ['lists, conditions, lookups and unescaped values', mail('{{#each rows}}<li>{{@index}} {{title}} {{{raw}}} {{lookup ../map key}}</li>{{else}}none{{/each}}{{#unless paid}}due{{/unless}}{{#with who}}{{name}}{{/with}}', '  Hello\n\t{{who.name}}  ', 'Rows: {{rows.length}} {{who.name}}'), {
      rows: [{ title: '<a>', raw: '<b>', key: 'k' }, { title: 'b & c', raw: '&amp;', key: 'missing' }],
      map: { k: 'v' },
      paid: false,
      who: { name: 'Ann' },
    }],
    ['prototype properties and missing values', mail('{{constructor}}{{name.constructor}}{{__proto__}}{{missing.deep}}', '{{missing}}x', null), { name: 'x' }],
    ['dates, numbers and booleans', mail('{{when}} {{n}} {{yes}} {{no}} {{nothing}}'), { when: new Date(Date.UTC(2026, 10, 25)), n: 1.5, yes: true, no: false, nothing: null }],
    ['a long message within the limits', mail('{{#each rows}}<tr><td>{{this}}</td></tr>{{/each}}'), { rows: Array.from({ length: 5000 }, (_, index) => `row ${index} <é>`) }],
  ];

  it.each(cases)('when %s is rendered, then the answer is what Handlebars on this thread renders', async (_name, template, variables) => {
    const renderer = rendererWith();
    expect(await renderer.render(template, variables)).toEqual(inThread(template, variables));
  });

  it('when a template fails with its variables, then it is still the validation error it was', async () => {
    const renderer = rendererWith();
    const error = await failureOf(renderer.render(mail('{{#each}}{{/each}}'), {}));
    expect(error).toMatchObject({ kind: 'validation', status: 400 });
    expect(error.items[0]!.message).toContain('The template could not be rendered: Must pass iterator to #each');
  });

  it('when variables are not plain data, then the render fails without holding a thread', async () => {
    const renderer = rendererWith({ threads: 1 });
    await expect(renderer.render(mail('{{f}}'), { f: () => 'x' })).rejects.toThrow(/could not be rendered/);
    await expect(renderer.render(mail('{{f}}'), { f: 'y' })).resolves.toMatchObject({ html: 'y' });
  });

  it('when the renderer is closed, then it renders nothing more', async () => {
    const renderer = createTemplateRenderer();
    await renderer.render(mail('x'), {});
    await renderer.close();
    await expect(renderer.render(mail('x'), {})).rejects.toThrow(/closed/);
  });
});
