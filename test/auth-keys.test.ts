import { test } from 'node:test';
import assert from 'node:assert/strict';
import { extractKey } from '../src/auth/extract-key.ts';
import { keyMatcher, generateKey, keyHint } from '../src/store/keys.ts';

test('generated keys are sk- plus at least 192 bits of randomness, all distinct', () => {
  const keys = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const key = generateKey();
    assert.match(key, /^sk-[A-Za-z0-9_-]+$/);
    const randomBytes = Buffer.from(key.slice(3), 'base64url').length;
    assert.ok(randomBytes * 8 >= 192, `only ${randomBytes * 8} bits`);
    keys.add(key);
  }
  assert.equal(keys.size, 200);
});

test('keyMatcher compares keys of any length', () => {
  assert.equal(keyMatcher('sk-same')('sk-same'), true);
  assert.equal(keyMatcher('sk-same')('sk-samf'), false);
  assert.equal(keyMatcher('sk-short')('sk-much-longer-key'), false);
  assert.equal(keyMatcher('')(''), true);
  assert.equal(keyMatcher('')('x'), false);
});

test('extractKey reads Bearer (any case) first, then x-api-key', () => {
  assert.equal(extractKey({ authorization: 'Bearer sk-abc' }), 'sk-abc');
  assert.equal(extractKey({ authorization: 'bearer   sk-abc  ' }), 'sk-abc');
  assert.equal(extractKey({ 'x-api-key': 'sk-xyz' }), 'sk-xyz');
  assert.equal(extractKey({ authorization: 'Bearer sk-abc', 'x-api-key': 'sk-xyz' }), 'sk-abc');
  assert.equal(extractKey({ authorization: 'Basic dXNlcjpwdw==', 'x-api-key': 'sk-xyz' }), 'sk-xyz');
  assert.equal(extractKey({ authorization: 'Basic dXNlcjpwdw==' }), undefined);
  assert.equal(extractKey({ authorization: 'Bearer ' }), undefined);
  assert.equal(extractKey({ 'x-api-key': '  ' }), undefined);
  assert.equal(extractKey({}), undefined);
});

test('keyHint shows only the prefix and the last four characters', () => {
  assert.equal(keyHint('sk-abcdefghijklmnopwxyz'), 'sk-…wxyz');
  assert.equal(keyHint('pasted-secret-1234'), '…1234');
});
