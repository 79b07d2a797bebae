import { AppError } from '../../src/domain/errors';
import { createTemplateRenderer, type MailTemplate } from '../../src/mail/templating';
import { BUILT_IN_TEMPLATES } from '../../src/modules/email-templates/built-in-templates';
import { htmlToText } from '../../src/mail/html-text';

// Every render runs in the renderer's threads, with the default budget.
const templates = createTemplateRenderer();
afterAll(() => templates.close());
const renderMail = (mail: MailTemplate, variables: Record<string, unknown>) => templates.render(mail, variables);
const checkTemplate = (part: Partial<MailTemplate>) => templates.check(part);

const template = (html: string, subject = 'Hi {{name}}', text: string | null = 'Hi {{name}}') => ({ subject, html, text });

describe('rendering an e-mail template', () => {
  it('escapes a value in the HTML part, and keeps it as it is in the subject and the text part', async () => {
    const rendered = await renderMail(template('<p>{{name}}</p>'), { name: '<script>alert("x")</script> & Co' });
    expect(rendered.html).toBe('<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co</p>');
    expect(rendered.subject).toBe('Hi <script>alert("x")</script> & Co');
    expect(rendered.text).toBe('Hi <script>alert("x")</script> & Co');
  });

  it('inserts a value unescaped only where the template asks for it with three braces', async () => {
    expect((await renderMail(template('{{{name}}}'), { name: '<b>bold</b>' })).html).toBe('<b>bold</b>');
  });

  it('renders a missing variable as nothing and folds the subject onto one line', async () => {
    expect(await renderMail(template('<p>{{missing.deep}}</p>', 'Hello\n  {{name}}\n'), {})).toEqual({ subject: 'Hello', html: '<p></p>', text: 'Hi ' });
  });

  it('never reads a property of an object prototype', async () => {
    const rendered = await renderMail(template('{{constructor}}{{name.constructor}}{{__proto__}}'), { name: 'x' });
    expect(rendered.html).toBe('');
  });

  it('walks nested values and lists with the built-in helpers', async () => {
    const html = '{{#each items}}<li>{{title}}: {{amount}}</li>{{/each}}{{#if paid}}paid{{else}}due{{/if}}';
    expect((await renderMail(template(html), { items: [{ title: 'Fee', amount: '10.00' }], paid: false })).html).toBe('<li>Fee: 10.00</li>due');
  });
});

describe('checking a template when it is saved', () => {
  const problemOf = async (part: Parameters<typeof checkTemplate>[0]) => {
    try {
      await checkTemplate(part);
      return undefined;
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      return (error as AppError).items[0];
    }
  };

  it('accepts every built-in message', async () => {
    for (const builtIn of Object.values(BUILT_IN_TEMPLATES)) expect(await problemOf(builtIn)).toBeUndefined();
  });

  it('refuses a syntax error, naming the part', async () => {
    expect(await problemOf({ html: '<p>{{#if x}}unclosed</p>' })).toMatchObject({ path: 'body.html', message: expect.stringContaining('The html is not a valid template') });
    expect(await problemOf({ subject: 'Hi {{name' })).toMatchObject({ path: 'body.subject' });
  });

  it('refuses helpers other than the built-in ones, partials and the log helper', async () => {
    expect(await problemOf({ html: '{{shout name}}' })).toMatchObject({ path: 'body.html' });
    expect(await problemOf({ text: '{{> footer}}' })).toMatchObject({ path: 'body.text' });
    expect(await problemOf({ html: '{{log "to the server"}}' })).toMatchObject({ path: 'body.html' });
  });
});

describe('the built-in invoice messages', () => {
  const variables = {
    invoice: { number: 'INV-000007', date: '2026-11-01', dueDate: '2026-12-01', periodFrom: '2026-11-01', periodTo: '2026-11-30', total: '119.00', currency: 'EUR' },
    seller: { name: 'Acme & Sons' },
    customer: { name: null },
    daysOverdue: 3,
  };

  it('name the invoice, its total, its due date and its seller, in the HTML and in its text alike', async () => {
    const invoice = await renderMail(BUILT_IN_TEMPLATES.invoice, variables);
    expect(invoice.subject).toBe('Invoice INV-000007 from Acme & Sons');
    expect(invoice.html).toContain('<p>Hello,</p>');
    expect(invoice.html).toContain('Acme &amp; Sons');
    // No text template: the text part is the HTML's text, word for word.
    expect(invoice.text).toBeNull();
    expect(htmlToText(invoice.html)).toBe('Hello,\n\nPlease find invoice INV-000007 attached: 119.00 EUR for 2026-11-01 to 2026-11-30, due on 2026-12-01.\n\nAcme & Sons');
  });

  it('tell how many days a reminded invoice is overdue', async () => {
    const reminder = await renderMail(BUILT_IN_TEMPLATES.reminder, variables);
    expect(reminder.subject).toBe('Reminder: invoice INV-000007 from Acme & Sons is overdue');
    expect(reminder.text).toBeNull();
    expect(htmlToText(reminder.html)).toContain('was due on 2026-12-01 and is 3 days overdue');
  });
});
