// A real node:test suite for tests/reports_in/test_format_tap.py: nested subtests, a failure, a skip, a TODO.
import { test, describe, it } from 'node:test';
import assert from 'node:assert/strict';

describe('math', () => {
  it('adds', () => assert.equal(1 + 1, 2));
  describe('nested', () => {
    it('multiplies', () => assert.equal(2 * 3, 6));
    it('divides', () => assert.equal(6 / 3, 2));
  });
});

test('fails', () => {
  assert.equal(1, 2, 'one is not two');
});

test('needs a database', { skip: 'no database' }, () => {});

test('future feature', { todo: 'not written yet' }, () => {
  assert.ok(false);
});

test('with subtests', async (t) => {
  await t.test('a', () => {});
  await t.test('b', () => {
    throw new Error('b broke');
  });
});
