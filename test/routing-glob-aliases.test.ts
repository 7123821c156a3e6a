import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileAliases, globMatcher, patternAlias } from '../src/routing/aliases.ts';
import { resolveModel, type FleetView } from '../src/routing/resolve.ts';

const fleet = (served: Record<string, string[]>, types: Record<string, 'openai' | 'anthropic'> = {}): FleetView => ({
  get: (name) =>
    served[name]
      ? {
          spec: {
            name,
            url: 'http://127.0.0.1:1',
            type: types[name] ?? 'openai',
            enabled: true,
            paid: false,
            local: true,
            chat_only: false,
            serverless_only: false,
          },
          modelsById: new Set(served[name]),
        }
      : undefined,
  backendsServing: (id) => Object.keys(served).filter((b) => served[b].includes(id)),
});

test('a glob matches whole names: * any run, ? one character, everything else literal', () => {
  const cases: [string, string, boolean][] = [
    ['claude-*', 'claude-sonnet-4-5-20250929', true],
    ['claude-*', 'my-claude-x', false],
    ['claude-*-haiku*', 'claude-3-5-haiku-20241022', true],
    ['claude-*-haiku*', 'claude-haiku-4-5', false],
    ['claude-*haiku*', 'claude-haiku-4-5', true],
    ['gpt-?o', 'gpt-4o', true],
    ['gpt-?o', 'gpt-44o', false],
    ['a.b', 'aXb', false],
    ['(x)+[y]', '(x)+[y]', true],
  ];
  for (const [glob, name, expected] of cases)
    assert.equal(globMatcher(glob).test(name), expected, `${glob} vs ${name}`);
});

test('the longest matching pattern wins; equal lengths keep table order', () => {
  const table = compileAliases({ 'claude-*': 'big', 'claude-*haiku*': 'small', 'x?': 'one', 'x*': 'two', exact: 'm' });
  assert.deepEqual(
    table.patterns.map((p) => p.pattern),
    ['claude-*haiku*', 'claude-*', 'x?', 'x*'],
  );
  assert.equal(patternAlias(table, 'claude-haiku-4-5')?.target, 'small');
  assert.equal(patternAlias(table, 'claude-opus-4-5')?.target, 'big');
  assert.equal(patternAlias(table, 'xy')?.target, 'one');
  assert.equal(patternAlias(table, 'exact'), undefined, 'exact keys are not patterns');
});

test('resolution order: exact alias, then a model the fleet serves, then the longest pattern', () => {
  const f = fleet({ local: ['qwen3-8b', 'llama-70b'], claude: ['claude-opus-4-5'] }, { claude: 'anthropic' });
  const aliases = compileAliases({
    big: 'llama-70b',
    'claude-*': 'big',
    'claude-*haiku*': 'qwen3-8b',
    'claude-opus-4-5': 'qwen3-8b',
  });
  // an exact alias beats the real id
  assert.deepEqual(resolveModel('claude-opus-4-5', f, aliases, 'messages')?.candidates, [
    { backend: 'local', model: 'qwen3-8b' },
  ]);
  // a pattern through an alias (one hop)
  const sonnet = resolveModel('claude-sonnet-4-5', f, aliases, 'messages');
  assert.deepEqual(sonnet, {
    requested: 'claude-sonnet-4-5',
    alias: 'claude-*',
    candidates: [{ backend: 'local', model: 'llama-70b' }],
  });
  assert.deepEqual(resolveModel('claude-haiku-4-5', f, aliases, 'openai')?.candidates, [
    { backend: 'local', model: 'qwen3-8b' },
  ]);
  // a real id is never hidden by a pattern
  const noExact = compileAliases({ 'claude-*': 'big', big: 'llama-70b' });
  assert.deepEqual(resolveModel('claude-opus-4-5', f, noExact, 'messages')?.candidates, [
    { backend: 'claude', model: 'claude-opus-4-5' },
  ]);
  // … unless the surface cannot reach it: then the pattern answers
  assert.deepEqual(resolveModel('claude-opus-4-5', f, noExact, 'openai')?.candidates, [
    { backend: 'local', model: 'llama-70b' },
  ]);
});

test('alias hops stop at a cycle and at four hops', () => {
  const f = fleet({ local: ['a', 'm'] });
  assert.equal(resolveModel('x', f, compileAliases({ x: 'y', y: 'x' }), 'openai'), undefined);
  assert.deepEqual(
    resolveModel('q*', f, compileAliases({ 'q*': 'h1', h1: 'h2', h2: 'h3', h3: 'm' }), 'openai')?.candidates,
    [{ backend: 'local', model: 'm' }],
  );
  assert.equal(
    resolveModel('q*', f, compileAliases({ 'q*': 'h1', h1: 'h2', h2: 'h3', h3: 'h4', h4: 'h5', h5: 'm' }), 'openai'),
    undefined,
  );
});
