import { periodOf, readQuestion } from '../../src/modules/chatbot/builtin-engine';
import { mentioned, type Directory } from '../../src/modules/chatbot/mentions';
import { candidatesReply } from '../../src/modules/chatbot/chatbot-queries';

const TODAY = '2026-11-25';

const directory: Directory = {
  customers: [
    { id: 'cus_acme', name: 'Acme Corporation' },
    { id: 'cus_umbrella_inc', name: 'Umbrella Inc' },
    { id: 'cus_umbrella_ltd', name: 'Umbrella Ltd' },
    { id: 'cus_balance', name: 'Balance Partners' },
    { id: 'cus_northwind', name: 'Northwind Traders' },
  ],
  meters: [{ id: 'mtr_api', name: 'API calls', metric: 'api_calls' }],
  contracts: [{ id: 'con_acme', name: 'Acme platform', customerId: 'cus_acme' }],
  entities: [{ id: 'ent_acme', name: 'Acme Corporation', customerId: 'cus_acme' }],
};

describe('the built-in engine', () => {
  it('reads periods: period words, whole months, years, dates and "since"', () => {
    expect(periodOf('revenue last month', TODAY)).toEqual({ from: '2026-10-01', to: '2026-10-31' });
    expect(periodOf('this quarter', TODAY)).toEqual({ from: '2026-10-01', to: '2026-12-31' });
    expect(periodOf('last quarter', TODAY)).toEqual({ from: '2026-07-01', to: '2026-09-30' });
    expect(periodOf('paid invoices last year', TODAY)).toEqual({ from: '2025-01-01', to: '2025-12-31' });
    expect(periodOf('in February', TODAY)).toEqual({ from: '2026-02-01', to: '2026-02-28' });
    // A month without its year is the latest one not after today.
    expect(periodOf('December', TODAY)).toEqual({ from: '2025-12-01', to: '2025-12-31' });
    expect(periodOf('revenue in 2025', TODAY)).toEqual({ from: '2025-01-01', to: '2025-12-31' });
    expect(periodOf('since 1 Oct', TODAY)).toEqual({ from: '2026-10-01', to: TODAY });
    expect(periodOf('between 1 September 2026 and 15 October 2026', TODAY)).toEqual({ from: '2026-09-01', to: '2026-10-15' });
    expect(periodOf('rate on 2026-10-15', TODAY)).toEqual({ from: '2026-10-15', to: '2026-10-15' });
    // A day written with its month's name is that day.
    expect(periodOf('EUR to USD exchange rate on 15 October 2026', TODAY)).toEqual({ from: '2026-10-15', to: '2026-10-15' });
    expect(periodOf('rate on October 15, 2026', TODAY)).toEqual({ from: '2026-10-15', to: '2026-10-15' });
    // Without its year, the latest such day not after today; a stray day ("today") does not override a named month.
    expect(periodOf('EUR to USD rate on May 5', TODAY)).toEqual({ from: '2026-05-05', to: '2026-05-05' });
    expect(periodOf('rate on 20 December', TODAY)).toEqual({ from: '2025-12-20', to: '2025-12-20' });
    expect(periodOf('revenue in October as of today', TODAY)).toEqual({ from: '2026-10-01', to: '2026-10-31' });
    expect(periodOf('paid invoices between 1 and 15 October', TODAY)).toEqual({ from: '2026-10-01', to: '2026-10-15' });
    expect(periodOf('how much does Acme owe', TODAY)).toBeUndefined();
    expect(periodOf('revenue in October last year', TODAY)).toEqual({ from: '2025-10-01', to: '2025-10-31' });
    expect(periodOf('revenue for March this year', TODAY)).toEqual({ from: '2026-03-01', to: '2026-03-31' });
    expect(periodOf('revenue in Q3 2026', TODAY)).toEqual({ from: '2026-07-01', to: '2026-09-30' });
    expect(periodOf('revenue from January to March 2026', TODAY)).toEqual({ from: '2026-01-01', to: '2026-03-31' });
    expect(periodOf('revenue for the year 2025', TODAY)).toEqual({ from: '2025-01-01', to: '2025-12-31' });
    expect(periodOf('October 0050', TODAY)).toEqual({ from: '0050-10-01', to: '0050-10-31' });
  });

  it('refuses a day no calendar holds, in every form it reads, rather than read it as another day', () => {
    for (const text of ['EUR to USD exchange rate on 31 February 2026', 'rate on 2026-02-30', 'What was revenue in 2026-02-30?', 'paid invoices since April 31', 'rate on 29 February 2026', 'rate on 2026-13-01', 'rate on 0 March 2026']) {
      expect(() => periodOf(text, TODAY)).toThrow(RangeError);
    }
    expect(periodOf('rate on 29 February 2028', TODAY)).toEqual({ from: '2028-02-29', to: '2028-02-29' });
    expect(periodOf('rate on 2026-02-28', TODAY)).toEqual({ from: '2026-02-28', to: '2026-02-28' });
    expect(periodOf('revenue from January to March 2026', TODAY)).toEqual({ from: '2026-01-01', to: '2026-03-31' });
  });

  it('matches a name written in full, else fuzzily, and never picks one of several that fit', () => {
    expect(mentioned('How much does Acme Corporation owe?', directory.customers, false)).toEqual({ found: directory.customers[0] });
    expect(mentioned("What is Acme's balance?", directory.customers, true)).toEqual({ found: directory.customers[0] });
    expect(mentioned('How much does Acme owe?', directory.customers, false)).toEqual({ none: true });
    expect(mentioned('What does Umbrella owe?', directory.customers, true)).toEqual({ ambiguous: [directory.customers[1], directory.customers[2]] });
    expect(mentioned('What does Initech owe?', directory.customers, true)).toEqual({ none: true });
    // Question words are never read as a name, and a look-alike is offered, never taken.
    expect(mentioned('What is the outstanding balance of Hooli?', directory.customers, true)).toEqual({ none: true });
    expect(mentioned('How much does Northwood owe?', directory.customers, true)).toMatchObject({ ambiguous: [directory.customers[4]] });
    // A name the question writes with words the customer's has not is another customer's, never this one.
    expect(mentioned('How much does Acme Europe owe?', directory.customers, true)).toEqual({ ambiguous: [directory.customers[0]] });
    expect(mentioned('How much does Northwind Zeta Industries owe?', directory.customers, true)).toEqual({ ambiguous: [directory.customers[4]] });
    expect(mentioned('How much does Northwind Z owe?', directory.customers, true)).toEqual({ ambiguous: [directory.customers[4]] });
    expect(mentioned('How much does Northwind A owe?', directory.customers, true)).toEqual({ ambiguous: [directory.customers[4]] });
    expect(readQuestion('Acme API calls used in October 2026', directory, TODAY)).toMatchObject({ kind: 'query', name: 'usage', input: { entity: 'ent_acme' } });
    // Words that cannot be a name's end the name: a question word, a lower-case word, a currency code, punctuation.
    for (const question of ['Has Northwind a balance due?', 'Is Northwind a late payer?', 'Northwind, I need the balance']) {
      expect(mentioned(question, directory.customers, true)).toEqual({ found: directory.customers[4] });
    }
    for (const question of ['Acme credit balance', 'Acme EUR balance']) expect(mentioned(question, directory.customers, true)).toEqual({ found: directory.customers[0] });
    expect(mentioned('Northwind GmbH balance', directory.customers, true)).toEqual({ ambiguous: [directory.customers[4]] });
    // One customer's revenue is never answered with the organisation's, whether the name is sure or not.
    for (const question of ['Acme Q3 revenue', 'Acme YTD revenue', 'Show Acme 2026 revenue', 'Acme Europe revenue this year']) {
      expect(readQuestion(question, directory, TODAY)).toMatchObject({ kind: 'help', missing: expect.stringContaining('revenue of one customer') });
    }
    // Its own words, started or with a typo, still name it.
    expect(mentioned('How much does Acme Corp owe?', directory.customers, true)).toEqual({ found: directory.customers[0] });
    expect(mentioned('How much does Acme Corporatoin owe?', directory.customers, true)).toEqual({ found: directory.customers[0] });
    // With names left unread, even a good fuzzy match is only offered.
    expect(mentioned("What is Acme's balance?", directory.customers, true, () => [], false)).toEqual({ ambiguous: [directory.customers[0]] });
  });

  it('reads an id as its item, an unknown id of the kind as no item at all, and never an id as words', () => {
    const customers = [
      { id: 'cus_01m961tkaspbb86w9ca400san5', name: 'CustA' },
      { id: 'cus_01m961tmj3qesh9fndvem9404t', name: 'Globex' },
    ];
    expect(mentioned('How much does cus_01m961tmj3qesh9fndvem9404t owe?', customers, true)).toEqual({ found: customers[1] });
    expect(mentioned('How much does CUS_01M961TKASPBB86W9CA400SAN5 owe?', customers, true)).toEqual({ found: customers[0] });
    // Another organisation's, or none: "cus" must not fit "CustA".
    expect(mentioned('How much does cus_xyz123abc owe?', customers, true)).toEqual({ ambiguous: [] });
    // An id of another kind is left out of the name.
    expect(mentioned('Does Globex owe anything on inv_01m961tkaspbb86w9?', customers, true)).toEqual({ found: customers[1] });
    expect(readQuestion('How much does cus_01m961tmj3qesh9fndvem9404t owe?', { ...directory, customers }, TODAY)).toEqual({ kind: 'query', name: 'outstanding_amount', input: { customer: customers[1]!.id } });
    expect(readQuestion('How much does cus_xyz123abc owe?', { ...directory, customers }, TODAY)).toEqual({ kind: 'candidates', what: 'customer', candidates: [] });
    // Nor is a question about one unknown customer answered for all of them.
    expect(readQuestion('Which invoices of cus_xyz123abc are overdue?', { ...directory, customers }, TODAY)).toEqual({ kind: 'candidates', what: 'customer', candidates: [] });
    expect(candidatesReply('customer', []).text).toBe('No customer of this organisation has the id the question gives.');
    expect(candidatesReply('customer', [customers[0]!], 'Cust').text).toBe('The nearest customer to "Cust" is CustA. Is it the one you mean?');
    expect(candidatesReply('customer', customers).text).toBe('Several customers fit: CustA, Globex. Which one do you mean?');
  });

  it('reads each kind of question into its query, and answers help when it cannot', () => {
    expect(readQuestion('How much does Acme owe?', directory, TODAY)).toEqual({ kind: 'query', name: 'outstanding_amount', input: { customer: 'cus_acme' } });
    expect(readQuestion('What does Umbrella owe?', directory, TODAY)).toMatchObject({ kind: 'candidates', what: 'customer' });
    expect(readQuestion('Which invoices are overdue?', directory, TODAY)).toEqual({ kind: 'query', name: 'overdue_invoices', input: {} });
    expect(readQuestion('revenue last month', directory, TODAY)).toEqual({ kind: 'query', name: 'revenue', input: { from: '2026-10-01', to: '2026-10-31' } });
    expect(readQuestion('top 3 customers this year', directory, TODAY)).toEqual({ kind: 'query', name: 'top_customers', input: { from: '2026-01-01', to: '2026-12-31', top: 3 } });
    expect(readQuestion('API calls used by Acme Corporation in October 2026', directory, TODAY)).toEqual({
      kind: 'query',
      name: 'usage',
      input: { meter: 'mtr_api', entity: 'ent_acme', from: '2026-10-01', to: '2026-10-31' },
    });
    expect(readQuestion('When does the Acme platform contract renew?', directory, TODAY)).toEqual({ kind: 'query', name: 'contract_status', input: { contract: 'con_acme' } });
    expect(readQuestion('USD to EUR rate', directory, TODAY)).toEqual({ kind: 'query', name: 'fx_rate', input: { from: 'USD', to: 'EUR', date: TODAY } });
    expect(readQuestion('Show all exchange rates between EUR and USD', directory, TODAY)).toMatchObject({ name: 'fx_rate', input: { from: 'EUR', to: 'USD' } });
    expect(readQuestion('What is the tax rate?', directory, TODAY)).toEqual({ kind: 'help' });
    // A customer the question names is never dropped: the answer is about it, or asks which one.
    expect(readQuestion('API calls used by Acme in October 2026', directory, TODAY)).toMatchObject({ name: 'usage', input: { entity: 'ent_acme' } });
    expect(readQuestion('Which invoices of Acme are overdue?', directory, TODAY)).toMatchObject({ name: 'overdue_invoices', input: { customer: 'cus_acme' } });
    expect(readQuestion('Which of Acme Corporation invoices are paid this year?', directory, TODAY)).toMatchObject({ name: 'invoices_by_status', input: { status: 'paid', customer: 'cus_acme' } });
    expect(readQuestion('What revenue did Acme Corporation bring last month?', directory, TODAY)).toMatchObject({ kind: 'help' });
    expect(readQuestion('What is the weather like?', directory, TODAY)).toEqual({ kind: 'help' });
    expect(readQuestion('How much does Initech owe?', directory, TODAY)).toEqual({ kind: 'help', missing: 'the customer' });
  });
});
