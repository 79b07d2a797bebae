import type { RequestHandler } from 'express';
import multer from 'multer';
import { AppError, ERROR_CODES } from '../domain/errors';
import { requireBodyType } from './body-guards';
import { UNKNOWN_PROPERTY } from './unknown-properties';

/** Form fields read at most beside the file: enough to name each one sent, few enough to cost nothing. */
const FIELDS_READ = 20;

/**
 * Multipart parsing of one file in the field `file`, of at most `limitBytes`, held in memory; errors come
 * back in the envelope: 415 at `headers.content-type` for a body that is not `multipart/form-data`, 413 at
 * `body.file` for a file too large, and 400 otherwise, by the path of the part at fault. The body is
 * closed, as a JSON body is: a form field, or a file in another field than `file`, is refused by its
 * path (`body.note`).
 */
export function singleFile(limitBytes: number): RequestHandler {
  // Clients send a file name's UTF-8 bytes as they are; multer would read them as Latin-1.
  const upload = multer({ storage: multer.memoryStorage(), limits: { fileSize: limitBytes, files: 1, fields: FIELDS_READ }, defParamCharset: 'utf8' }).single('file');
  const multipartOnly = requireBodyType(['multipart/form-data']);
  return (req, res, next) =>
    multipartOnly(req, res, (refused?: unknown) => {
      if (refused) return next(refused);
      upload(req, res, (error: unknown) => {
        if (!error) {
          const fields = Object.keys((req.body ?? {}) as Record<string, unknown>);
          if (fields.length > 0) return next(AppError.invalid(fields.map((name) => ({ path: `body.${name.slice(0, 100)}`, message: UNKNOWN_PROPERTY }))));
          return next();
        }
        if (error instanceof multer.MulterError && error.code === 'LIMIT_FILE_SIZE') {
          return next(new AppError('payload_too_large', 'File too large', [{ code: ERROR_CODES.payload_too_large, path: 'body.file', message: `at most ${limitBytes} bytes` }]));
        }
        if (error instanceof multer.MulterError && error.code === 'LIMIT_UNEXPECTED_FILE' && error.field && error.field !== 'file') {
          return next(AppError.validation(`${UNKNOWN_PROPERTY}: the file goes in the field "file"`, `body.${error.field.slice(0, 100)}`));
        }
        if (error instanceof multer.MulterError && error.code === 'LIMIT_FIELD_COUNT') {
          return next(AppError.validation(`${UNKNOWN_PROPERTY}: this request takes one field, "file"`, 'body'));
        }
        const message = error instanceof Error ? error.message : 'Malformed multipart body';
        return next(AppError.validation(message, 'body.file'));
      });
    });
}

/** The OpenAPI request body of a route that takes `singleFile`. */
export const singleFileRequestBody = {
  required: true,
  content: { 'multipart/form-data': { schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } }, additionalProperties: false } } },
} as const;
