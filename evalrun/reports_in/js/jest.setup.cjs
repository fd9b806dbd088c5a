// evalrun's setup file for jest: records each test's assertion count (expect's own count) for evalrun,
// which reads it beside the JUnit report, so removing an expect() from a baselined test is "asserts less".
// Add it to jest's setupFilesAfterEnv (docs/recipes-junit.md); `evalrun setup-file jest` prints where it is.
// Outside evalrun (EVALRUN_WORKDIR unset) it does nothing.
const { appendFileSync, mkdirSync } = require('node:fs');
const { join } = require('node:path');

const workdir = process.env.EVALRUN_WORKDIR;
if (workdir) {
  const folder = join(workdir, 'assertion-counts');
  const file = join(folder, `jest-${process.pid}.jsonl`);
  // jest-circus keeps the running test (its describe blocks are its parents) under this symbol.
  const running = () => {
    const symbol = Object.getOwnPropertySymbols(globalThis).find((s) => s.description === 'JEST_STATE_SYMBOL');
    return symbol ? globalThis[symbol]?.currentlyRunningTest : undefined;
  };
  afterEach(() => {
    const test = running();
    if (!test) return; // not jest-circus, or a concurrent test: no count, and evalrun says so
    const titles = [];
    for (let block = test; block && block.parent; block = block.parent) titles.unshift(block.name);
    const state = expect.getState();
    const line = { v: 1, runner: 'jest', file: state.testPath ?? '', titles, assertions: state.assertionCalls };
    mkdirSync(folder, { recursive: true });
    appendFileSync(file, JSON.stringify(line) + '\n');
  });
}
