import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import type { Response } from 'supertest';
import { waitFor } from '../../support/wait';
import { capturedMail } from './smtp-capture';

/** supertest's parser for a binary answer (a PDF, an image): the body as bytes. */
export function binary(response: Response, done: (error: Error | null, body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  response.on('data', (chunk: Buffer) => chunks.push(chunk));
  response.on('end', () => done(null, Buffer.concat(chunks)));
}

/** A PDF written to a file of its own, for the poppler tools to read. */
export function pdfFile(content: Buffer): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pdf-')), 'document.pdf');
  fs.writeFileSync(file, content);
  return file;
}

/** The text pdftotext reads from a PDF, laid out as on the page. */
export function pdfText(content: Buffer): string {
  return execFileSync('pdftotext', ['-layout', pdfFile(content), '-'], { encoding: 'utf8' });
}

/** The one message the test SMTP server captured whose raw text holds `marker` (a Message-ID), parsed. */
export async function mailWith(marker: string): Promise<ParsedMail> {
  const raw = await waitFor(async () => {
    const found = capturedMail(process.env.TEST_MAIL_DIR!).filter((message) => message.includes(marker));
    return found.length > 0 ? found : undefined;
  }, 60_000);
  expect(raw).toHaveLength(1);
  return simpleParser(raw[0]!);
}
