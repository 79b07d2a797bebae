import os from 'node:os';
import path from 'node:path';
import express from 'express';
import request from 'supertest';
import { currencyMinorUnits } from '../../src/domain/currencies';
import { DomainError, InvariantError } from '../../src/domain/errors';
import { errorHandler } from '../../src/http/error-handler';
import { SetupError } from '../../src/config';
import { findTemporalBinary } from '../../src/temporal/binaries';

/** An app whose one route throws `error`, answered by the central error handler. */
function throwing(error: Error) {
  const app = express();
  app.get('/x', () => {
    throw error;
  });
  app.use(errorHandler);
  return request(app).get('/x');
}

describe('errors that reach a request', () => {
  it('when the program finds an invariant broken, then a plain 500 that does not show its message', async () => {
    const res = await throwing(new InvariantError('3 of the page\'s charges were made meanwhile'));
    expect([res.status, res.body]).toEqual([500, { status: 'error', message: 'Internal server error', errors: [{ code: 1000, message: 'Internal server error' }] }]);
  });

  it('when a domain rule is broken, then 400 with its message', async () => {
    const thrown = (() => {
      try {
        currencyMinorUnits('ZZZ');
      } catch (error) {
        return error as Error;
      }
      throw new Error('ZZZ was taken for a currency');
    })();
    expect(thrown).toBeInstanceOf(DomainError);
    const res = await throwing(thrown);
    expect([res.status, res.body]).toEqual([400, { status: 'error', message: 'ZZZ is not an ISO 4217 currency', errors: [{ code: 1001, message: 'ZZZ is not an ISO 4217 currency' }] }]);
  });
});

describe('what stops a process from starting', () => {
  it('when a Temporal binary is named but is not an executable file, then a SetupError names it', () => {
    const missing = path.join(os.tmpdir(), `no-such-temporal-${process.pid}`);
    expect(() => findTemporalBinary('temporal', missing, '')).toThrow(new SetupError(`${missing} is not an executable file`));
    expect(() => findTemporalBinary('temporal', missing, '')).toThrow(SetupError);
  });
});
