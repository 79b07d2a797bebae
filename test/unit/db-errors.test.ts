import { deterministicDatabaseError } from '../../src/db/errors';

const pgError = (code: string) => Object.assign(new Error(`statement failed (${code})`), { code });

describe('deterministicDatabaseError: which refusals of Postgres no retry can pass', () => {
  it('when a value does not fit (class 22) or passes a limit of the program (class 54: an index entry past 2,704 bytes), then a 400', () => {
    for (const code of ['22001', '22003', '22P05', '54000', '54023']) expect(deterministicDatabaseError(pgError(code))).toMatchObject({ kind: 'validation' });
  });

  it('when a key is taken or a referenced row missing (class 23), then a conflict, or a not found when the row referred to is missing', () => {
    expect(deterministicDatabaseError(pgError('23505'))).toMatchObject({ kind: 'conflict' });
    expect(deterministicDatabaseError(pgError('23503'))).toMatchObject({ kind: 'not_found' });
    // A delete of a row still referenced: the row exists, so a conflict, not a not found.
    const stillReferenced = Object.assign(pgError('23503'), { detail: 'Key (id)=(pln_1) is still referenced from table "plan_changes".' });
    expect(deterministicDatabaseError(stillReferenced)).toMatchObject({ kind: 'conflict', message: 'Other records still refer to this one' });
  });

  it('when the fault may pass on a retry (a serialization failure, a deadlock, a lost connection), or is no SQLSTATE, then nothing', () => {
    for (const code of ['40001', '40P01', '08006', '57P01', 'ECONNRESET']) expect(deterministicDatabaseError(pgError(code))).toBeUndefined();
    expect(deterministicDatabaseError(new Error('no code'))).toBeUndefined();
  });
});
