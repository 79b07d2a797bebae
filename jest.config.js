/**
 * unit: pure code; replay: recorded histories against today's workflows; workflow: workflows on the
 * Temporal test server with fake activities; integration: real Postgres and Temporal.
 */
const transform = { '^.+\\.ts$': ['@swc/jest'] };

module.exports = {
  projects: [
    {
      displayName: 'unit',
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
      transform,
      testEnvironment: 'node',
    },
    {
      displayName: 'replay',
      testMatch: ['<rootDir>/test/replay/**/*.test.ts'],
      transform,
      testEnvironment: 'node',
    },
    {
      displayName: 'workflow',
      testMatch: ['<rootDir>/test/workflow/**/*.test.ts'],
      transform,
      testEnvironment: 'node',
    },
    {
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      transform,
      testEnvironment: 'node',
      globalSetup: '<rootDir>/test/integration/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/integration/support/global-teardown.ts',
      setupFilesAfterEnv: ['<rootDir>/test/integration/support/timeouts.ts'],
    },
  ],
  // Three files at once on 2 cores. The CPU is busy throughout at three (vmstat showed no idle time): a
  // fourth worker took as long (1,143 s against 1,153 s), and two took longer when much of the suite still
  // waited on timers and restarts.
  maxWorkers: 3,
  // The API contract test is the longest file by far: it starts first, the rest runs beside it.
  testSequencer: '<rootDir>/test/support/contract-first-sequencer.cjs',
};
