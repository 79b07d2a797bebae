import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';

export interface OutgoingMail {
  to: string[];
  subject: string;
  /** The plain-text part; a message may have it, its HTML part, or both. */
  text?: string;
  html?: string;
  attachments?: Array<{ filename: string; content: Buffer; contentType: string }>;
  /** Lets the receiving side (and a retried send) recognise the same message. */
  messageId: string;
}

export interface Mailer {
  send(mail: OutgoingMail): Promise<void>;
}

/**
 * SMTP when `SMTP_URL` is set; otherwise each message is written as an .eml file under the data
 * directory's outbox, so a laptop run delivers somewhere a person can open.
 */
export function createMailer(options: { smtpUrl?: string; from: string; dataDir: string }): Mailer {
  if (options.smtpUrl) {
    const transport = nodemailer.createTransport(options.smtpUrl);
    return {
      async send(mail) {
        await transport.sendMail({ from: options.from, ...mail });
      },
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  const outbox = path.resolve(options.dataDir, 'outbox');
  return {
    async send(mail) {
      const info = await transport.sendMail({ from: options.from, ...mail });
      await fs.mkdir(outbox, { recursive: true });
      const name = mail.messageId.replace(/[^\w.-]/g, '_');
      await fs.writeFile(path.join(outbox, `${name}.eml`), info.message as Buffer);
    },
  };
}
