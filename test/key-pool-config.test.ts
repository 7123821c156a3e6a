/**
 * `api_keys` in config.yaml: `${VAR}` in each entry, the problems (both keys set, an empty list,
 * a key listed twice) at their key paths and never quoting a key; and the pool's own rules on
 * given times: round robin over the keys not muted, Retry-After as seconds or an HTTP date, the
 * backoff, and a reload that keeps a key's state while the key stays and drops it when it changes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfigText } from '../src/config/load.ts';
import { KeyPool, rateLimitMs, retryAfterMs, AUTH_MUTE_MS } from '../src/backends/key-pool.ts';
import { BackendRegistry } from '../src/backends/registry.ts';
import { backendSpec } from './helpers/gateway.ts';

const yaml = (keys: string, extra = '') =>
  `backends:\n  - name: pool\n    url: https://api.example.com\n    paid: true\n${keys}${extra}`;

function problems(text: string, env: NodeJS.ProcessEnv = {}) {
  const result = parseConfigText(text, env);
  assert.equal(result.ok, false, 'expected problems');
  return result.ok ? [] : result.problems;
}

test('${VAR} works in each entry of api_keys', () => {
  const text = yaml('    api_keys: ["${KEY_A}", "${KEY_B}", literal-key-3]\n');
  const result = parseConfigText(text, { KEY_A: 'sk-from-env-a', KEY_B: 'sk-from-env-b' });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.problems));
  assert.deepEqual(result.config.backends[0].api_keys, ['sk-from-env-a', 'sk-from-env-b', 'literal-key-3']);
  assert.equal(result.config.backends[0].api_key, undefined);
  const unset = problems(text, { KEY_A: 'sk-a' });
  assert.ok(
    unset.some((p) => p.path === 'backends[0].api_keys[1]' && /KEY_B/.test(p.message)),
    JSON.stringify(unset),
  );
});

test('api_key with api_keys, an empty list, an empty entry, a repeated key: problems at their paths', () => {
  const both = problems(yaml('    api_key: sk-secret-one\n    api_keys: [sk-secret-two]\n'));
  assert.deepEqual(
    both.map((p) => p.path),
    ['backends[0].api_keys'],
  );
  assert.match(both[0].message, /either api_key or api_keys/);
  const empty = problems(yaml('    api_keys: []\n'));
  assert.equal(empty[0].path, 'backends[0].api_keys');
  assert.match(empty[0].message, /non-empty list/);
  const blank = problems(yaml('    api_keys: [sk-ok-key, ""]\n'));
  assert.equal(blank[0].path, 'backends[0].api_keys[1]');
  const twice = problems(yaml('    api_keys: [sk-secret-dup, sk-other, sk-secret-dup]\n'));
  assert.deepEqual(twice, [{ path: 'backends[0].api_keys[2]', message: 'the same key as api_keys[0]' }]);
  for (const p of [...both, ...twice]) assert.doesNotMatch(p.message, /sk-secret/, 'a problem never quotes a key');
});

test('round robin over the keys not muted; every key muted until the first comes back', () => {
  const pool = new KeyPool(['k-one-1111', 'k-two-2222', 'k-three-3333']);
  assert.deepEqual(
    [pool.next(0), pool.next(0), pool.next(0), pool.next(0)],
    ['k-one-1111', 'k-two-2222', 'k-three-3333', 'k-one-1111'],
  );
  pool.refused('k-two-2222', 429, '30', 1000);
  assert.deepEqual([pool.next(1000), pool.next(1000), pool.next(1000)], ['k-three-3333', 'k-one-1111', 'k-three-3333']);
  pool.refused('k-one-1111', 401, undefined, 1000);
  pool.refused('k-three-3333', 429, '5', 1000);
  assert.equal(pool.next(1000), undefined);
  assert.equal(pool.usable(1000), false);
  assert.equal(pool.allRefused(1000), false, 'two of them are only rate-limited');
  assert.equal(pool.nextUsableAt(1000), 6000);
  assert.equal(pool.next(6000), 'k-three-3333');
  assert.equal(pool.next(31_000), 'k-two-2222', 'each back when its own time is up');
  assert.equal(pool.states(31_000)[0].seconds_left, Math.ceil((1000 + AUTH_MUTE_MS - 31_000) / 1000));
});

test('Retry-After: seconds or an HTTP date; without one a backoff that doubles and is capped', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(retryAfterMs('7', now), 7000);
  assert.equal(retryAfterMs('Thu, 01 Jan 2026 00:00:42 GMT', now), 42_000);
  assert.equal(retryAfterMs('soon', now), undefined);
  assert.equal(retryAfterMs(undefined, now), undefined);
  assert.equal(rateLimitMs('0', 1, now), 1000, 'never less than a second (the same key would come straight back)');
  assert.equal(rateLimitMs('Thu, 01 Jan 2026 00:00:42 GMT', 1, now), 42_000);
  assert.deepEqual(
    [1, 2, 3, 10].map((strikes) => rateLimitMs(undefined, strikes, now)),
    [2000, 4000, 8000, 120_000],
  );
});

test('a reload keeps the state of a key that stays and starts a changed key afresh', () => {
  const registry = new BackendRegistry(() => 1000);
  const spec = (keys: string[]) => backendSpec({ name: 'pool', url: 'https://api.example.com', api_keys: keys });
  registry.reconcile([spec(['k-stays-1111', 'k-goes-2222'])], 4);
  const pool = registry.get('pool')!.keys!;
  pool.refused('k-stays-1111', 401, undefined, 1000);
  pool.refused('k-goes-2222', 401, undefined, 1000);
  registry.reconcile([spec(['k-stays-1111', 'k-new-3333'])], 4);
  const states = registry.keyStates('pool')!;
  assert.deepEqual(
    states.map((s) => [s.hint, s.state]),
    [
      ['#1 …1111', 'muted'],
      ['#2 …3333', 'ok'],
    ],
  );
  registry.reconcile([backendSpec({ name: 'pool', url: 'https://api.example.com', api_key: 'k-sole' })], 4);
  assert.equal(registry.keyStates('pool'), undefined, 'no pool without api_keys');
});
