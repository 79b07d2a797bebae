import type { Response } from 'express';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** RFC 5987 / RFC 8187 `ext-value`: UTF-8, percent-encoded, with the few characters encodeURIComponent leaves alone escaped too. */
function extValue(filename: string): string {
  return `UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/** A quoted-string fallback for old clients: printable ASCII only, quotes and backslashes replaced. */
function asciiFallback(filename: string): string {
  return filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_') || 'download';
}

/**
 * Every download is an attachment, whatever its type: a browser never renders an uploaded file in our
 * origin. The name survives in UTF-8 through `filename*`; `filename` is the ASCII fallback.
 */
export function sendAsAttachment(res: Response, contentType: string, filename: string): Response {
  return res
    .status(200)
    .type(contentType)
    .setHeader('Content-Disposition', `attachment; filename="${asciiFallback(filename)}"; filename*=${extValue(filename)}`);
}

/** A document rendered in memory (an invoice's or a credit note's PDF), sent as an attachment. */
export function sendPdf(res: Response, pdf: { filename: string; content: Buffer }): void {
  sendAsAttachment(res, 'application/pdf', pdf.filename).send(pdf.content);
}

/**
 * Streams a stored file as an attachment. `pipeline` closes the source (a file, an S3 body) when the client
 * goes away mid-download, so no connection is left open.
 */
export async function streamAttachment(res: Response, file: { content: Readable; size: number }, contentType: string, filename: string): Promise<void> {
  sendAsAttachment(res, contentType, filename).setHeader('Content-Length', file.size);
  await pipeline(file.content, res);
}
