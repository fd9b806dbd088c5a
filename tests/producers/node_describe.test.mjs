// A real node:test suite for JUnit identity: the same test name under two describes,
// a TODO that fails as expected, a TODO that passes now, a skip, an empty it.todo. DROP_ADD=1 removes
// describe('add') > it('works'), as a user deleting one test would.
import { describe, it, test } from 'node:test';
import assert from 'node:assert/strict';

describe('add', () => {
  if (!process.env.DROP_ADD) {
    it('works', () => assert.equal(1 + 1, 2));
  }
  it('carries', () => assert.equal(9 + 1, 10));
});

describe('sub', () => {
  it('works', () => assert.equal(2 - 1, 1));
  describe('negative', () => {
    it('works', () => assert.equal(1 - 2, -1));
  });
});

test('future feature', { todo: 'not written yet' }, () => {
  assert.ok(false, 'not there');
});

test('done feature', { todo: 'remove me' }, () => {});

test('needs a database', { skip: 'no database' }, () => {});

it.todo('not started');
