import type { MailTemplate } from '../../mail/templating';

/**
 * The messages an organisation gets until it makes its own template of the kind. Their variables are
 * those of every invoice message (see `invoiceMailVariables`). They have no text template: the text part
 * is the text of the rendered HTML (`htmlToText`), so that both parts always say the same.
 */
export const BUILT_IN_TEMPLATES: Record<'invoice' | 'reminder', MailTemplate> = {
  invoice: {
    subject: 'Invoice {{invoice.number}} from {{seller.name}}',
    html: [
      '<p>Hello{{#if customer.name}} {{customer.name}}{{/if}},</p>',
      '<p>Please find invoice <strong>{{invoice.number}}</strong> attached: {{invoice.total}} {{invoice.currency}} for {{invoice.periodFrom}} to {{invoice.periodTo}}{{#if invoice.dueDate}}, due on {{invoice.dueDate}}{{/if}}.</p>',
      '{{#if invoice.partlySettled}}<p>After your credit, credit notes and payments, {{invoice.amountDue}} {{invoice.currency}} is due.</p>{{/if}}',
      '<p>{{seller.name}}</p>',
    ].join('\n'),
    text: null,
  },
  reminder: {
    subject: 'Reminder: invoice {{invoice.number}} from {{seller.name}} is overdue',
    html: [
      '<p>Hello{{#if customer.name}} {{customer.name}}{{/if}},</p>',
      '<p>Invoice <strong>{{invoice.number}}</strong> of {{invoice.date}} for {{invoice.total}} {{invoice.currency}} was due on {{invoice.dueDate}} and is {{daysOverdue}} days overdue{{#if invoice.partlySettled}}: {{invoice.amountDue}} {{invoice.currency}} of it is still owed{{/if}}. Please find it attached.</p>',
      '<p>If you have paid it already, thank you, and please ignore this reminder.</p>',
      '<p>{{seller.name}}</p>',
    ].join('\n'),
    text: null,
  },
};
