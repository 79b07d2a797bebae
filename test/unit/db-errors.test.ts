import { deterministicDatabaseError, isIntegrityViolation, retriedOnSqlState } from '../../src/db/errors';

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

describe('retriedOnSqlState: a step run again while Postgres refuses it in one of the named ways', () => {
  /** A step that fails with `codes`, one per call, then answers how many calls it took. */
  const failingWith = (codes: string[]) => {
    let calls = 0;
    return async () => {
      calls += 1;
      const code = codes[calls - 1];
      if (code !== undefined) throw pgError(code);
      return calls;
    };
  };
  const quick = { attempts: 3, pauseMs: () => 1 };

  it('when it fails with a named SQLSTATE fewer times than its attempts, then it answers', async () => {
    await expect(retriedOnSqlState(['40P01', '40001'], failingWith(['40P01', '40001']), quick)).resolves.toBe(3);
  });

  it('when it fails with a named SQLSTATE on every attempt, then the last failure is thrown', async () => {
    await expect(retriedOnSqlState(['40P01'], failingWith(['40P01', '40P01', '40P01', '40P01']), quick)).rejects.toMatchObject({ code: '40P01' });
  });

  it('when it fails another way (another SQLSTATE, or none), then that failure is thrown at once', async () => {
    const step = failingWith(['23505']);
    await expect(retriedOnSqlState(['40P01'], step, quick)).rejects.toMatchObject({ code: '23505' });
    await expect(step()).resolves.toBe(2);
    await expect(retriedOnSqlState(['40P01'], async () => Promise.reject(new Error('no code')), quick)).rejects.toThrow('no code');
  });
});

describe('isIntegrityViolation', () => {
  it('when Postgres refused the data (class 23), then true; any other SQLSTATE or none, false', () => {
    for (const code of ['23505', '23503', '23514']) expect(isIntegrityViolation(pgError(code))).toBe(true);
    for (const code of ['22001', '40P01', 'ECONNRESET']) expect(isIntegrityViolation(pgError(code))).toBe(false);
    expect(isIntegrityViolation(new Error('no code'))).toBe(false);
  });
});
