import type { RequestHandler } from 'express';
import multer from 'multer';
import { AppError, ERROR_CODES } from '../domain/errors';

/**
 * Multipart parsing of one file in the field `file`, of at most `limitBytes`, held in memory; errors come
 * back in the envelope (413 for a file too large, 400 otherwise, both at `body.file`). `fields` caps the
 * other form fields a body may carry.
 */
export function singleFile(limitBytes: number, options: { fields?: number } = {}): RequestHandler {
  // Clients send a file name's UTF-8 bytes as they are; multer would read them as Latin-1.
  const upload = multer({ storage: multer.memoryStorage(), limits: { fileSize: limitBytes, files: 1, fields: options.fields }, defParamCharset: 'utf8' }).single('file');
  return (req, res, next) =>
    upload(req, res, (error: unknown) => {
      if (!error) return next();
      if (error instanceof multer.MulterError && error.code === 'LIMIT_FILE_SIZE') {
        return next(new AppError('payload_too_large', 'File too large', [{ code: ERROR_CODES.payload_too_large, path: 'body.file', message: `at most ${limitBytes} bytes` }]));
      }
      const message = error instanceof Error ? error.message : 'Malformed multipart body';
      return next(AppError.validation(message, 'body.file'));
    });
}

/** The OpenAPI request body of a route that takes `singleFile`. */
export const singleFileRequestBody = {
  required: true,
  content: { 'multipart/form-data': { schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } }, additionalProperties: false } } },
} as const;
