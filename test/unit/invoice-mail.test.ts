import type { OutgoingMail } from '../../src/mail/mailer';
import { documentPdf, mailWithPdf } from '../../src/modules/invoices/invoice-mail';
import type { InvoiceDocument } from '../../src/modules/invoices/invoice-pdf';

const document: InvoiceDocument = {
  number: 'INV-0007',
  status: 'raised',
  date: '2026-11-01',
  fromDate: null,
  toDate: null,
  dueDate: '2026-12-01',
  currency: 'USD',
  locale: 'en-US',
  seller: null,
  customer: null,
  items: [{ title: 'Platform fee', description: null, quantity: '1', price: '100.00', amount: '100.00' }],
  subtotal: '100.00',
  taxes: [],
  total: '100.00',
  baseCurrency: null,
  baseTotal: null,
};

function capturingMailer() {
  const sent: OutgoingMail[] = [];
  return { sent, mailer: { send: async (mail: OutgoingMail) => void sent.push(mail) } };
}

describe('mail with a PDF (invoice sent, reminder, credit note)', () => {
  it('when a message has no text part, then it goes with its HTML, the text of its HTML and the document as <number>.pdf', async () => {
    const { sent, mailer } = capturingMailer();
    await mailWithPdf(mailer, { to: ['ap@acme.test'], message: { subject: 'Invoice INV-0007', html: '<p>Due on <b>2026-12-01</b> &amp; payable</p>', text: null }, document, id: 'inv_1', messageId: '<invoice-inv_1-3@billing>' });
    expect(sent).toEqual([
      {
        to: ['ap@acme.test'],
        subject: 'Invoice INV-0007',
        html: '<p>Due on <b>2026-12-01</b> &amp; payable</p>',
        text: 'Due on 2026-12-01 & payable',
        attachments: [{ filename: 'INV-0007.pdf', content: expect.any(Buffer), contentType: 'application/pdf' }],
        messageId: '<invoice-inv_1-3@billing>',
      },
    ]);
    expect(sent[0]!.attachments![0]!.content.subarray(0, 5).toString()).toBe('%PDF-');
  });

  it('when a message has a text part, then it goes too', async () => {
    const { sent, mailer } = capturingMailer();
    await mailWithPdf(mailer, { to: ['ap@acme.test'], message: { subject: 's', html: '<p>h</p>', text: 'h' }, document, id: 'inv_1', messageId: '<m@billing>' });
    expect(sent[0]).toMatchObject({ subject: 's', html: '<p>h</p>', text: 'h' });
  });

  it('when the document has no number yet, then its PDF is named by its id', async () => {
    expect((await documentPdf({ ...document, number: null }, 'inv_1')).filename).toBe('inv_1.pdf');
  });
});
