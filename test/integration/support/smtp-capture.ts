import fs from 'node:fs';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';

/** Recipients at this domain are refused for good (550), as a mail server refuses an unknown mailbox. */
export const REFUSED_DOMAIN = 'refused.example';

/** A local SMTP server that writes every message it receives to `dir` as an .eml file. */
export async function startSmtpCapture(dir: string): Promise<{ port: number; close: () => Promise<void> }> {
  fs.mkdirSync(dir, { recursive: true });
  let count = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (address.address.endsWith(`@${REFUSED_DOMAIN}`)) return callback(Object.assign(new Error('5.1.1 Mailbox unavailable'), { responseCode: 550 }));
      return callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        count += 1;
        const recipients = session.envelope.rcptTo.map((rcpt) => rcpt.address).join(',');
        fs.writeFileSync(path.join(dir, `${Date.now()}-${count}.eml`), `X-Envelope-To: ${recipients}\r\n${Buffer.concat(chunks).toString('utf8')}`);
        callback();
      });
    },
  });
  // A sender killed mid-message (the chaos suites kill workers) resets its connection: that message was
  // never accepted, and its sender's retry sends it again. Unheard, the error would end the test process.
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Messages captured so far. */
export function capturedMail(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).sort().map((file) => fs.readFileSync(path.join(dir, file), 'utf8'));
}
