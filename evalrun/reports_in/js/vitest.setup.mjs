// evalrun's setup file for vitest: records each test's assertion count (expect's own count) for evalrun,
// which reads it beside the JUnit report, so removing an expect() from a baselined test is "asserts less".
// Add it to vitest's setupFiles (docs/recipes-junit.md); `evalrun setup-file vitest` prints where it is.
// Outside evalrun (EVALRUN_WORKDIR unset) it does nothing.
import { afterEach, expect } from 'vitest';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';

const workdir = process.env.EVALRUN_WORKDIR;
if (workdir) {
  const folder = join(workdir, 'assertion-counts');
  const file = join(folder, `vitest-${process.pid}-${threadId}.jsonl`);
  afterEach((context) => {
    const task = context.task;
    if (task.concurrent) return; // expect's count is shared by concurrent tests: no count, and evalrun says so
    const state = expect.getState();
    const titles = [];
    for (let t = task; t && t !== task.file; t = t.suite) titles.unshift(t.name);
    const line = { v: 1, runner: 'vitest', file: task.file?.filepath ?? state.testPath ?? '', titles,
                   assertions: state.assertionCalls };
    mkdirSync(folder, { recursive: true });
    appendFileSync(file, JSON.stringify(line) + '\n');
  });
}
