import type { Response } from 'express';
import type { ErrorItem } from '../domain/errors';

export interface SuccessEnvelope<T> {
  status: 'success';
  message: 'Success';
  data: T;
}

export interface ErrorEnvelope {
  status: 'error';
  message: string;
  errors: ErrorItem[];
}

export function sendSuccess<T>(res: Response, data: T, httpStatus = 200): void {
  const body: SuccessEnvelope<T> = { status: 'success', message: 'Success', data };
  res.status(httpStatus).json(body);
}

export function sendError(res: Response, httpStatus: number, message: string, errors: ErrorItem[] = []): void {
  const body: ErrorEnvelope = { status: 'error', message, errors };
  res.status(httpStatus).json(body);
}
