const Sequencer = require('@jest/test-sequencer').default;

/**
 * The API contract test (schemathesis over every operation) is the longest file by far: it starts first,
 * so that the rest of the suite runs beside it on the other worker instead of after it.
 */
class ContractFirstSequencer extends Sequencer {
  async sort(tests) {
    const sorted = await super.sort(tests);
    const first = (test) => (/openapi-contract\.test\.ts$/.test(test.path) ? 0 : 1);
    return [...sorted].sort((a, b) => first(a) - first(b));
  }
}

module.exports = ContractFirstSequencer;
