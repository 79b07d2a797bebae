/**
 * fast-check's time limit for a property that runs inside a jest test of `jestTimeoutMs`, half a minute
 * short of it. Past the limit fast-check starts no more runs and stops shrinking: a failure found late is
 * reported with the smallest counterexample found so far, where jest's timeout would cut the shrinking off
 * and say nothing of it; and a property that has not reached its `numRuns` by then fails (its runs are
 * skipped, not passed).
 */
export const shrinkWithin = (jestTimeoutMs: number): { skipAllAfterTimeLimit: number } => ({ skipAllAfterTimeLimit: jestTimeoutMs - 30_000 });
