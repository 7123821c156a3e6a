import { test } from 'node:test';
import assert from 'node:assert/strict';
import { filterAllowed, isListedModelVisible, type AllowContext } from '../src/auth/allow.ts';

// "fast" is an alias served by two backends; "qwen3" is a bare id served by two backends.
const fastAlias: AllowContext = {
  requested: 'fast',
  alias: 'fast',
  candidates: [
    { backend: 'gpu1', model: 'qwen3-8b' },
    { backend: 'openrouter', model: 'qwen/qwen3-8b' },
  ],
};
const bareQwen: AllowContext = {
  requested: 'qwen3',
  candidates: [
    { backend: 'gpu1', model: 'qwen3' },
    { backend: 'gpu2', model: 'qwen3' },
  ],
};

const cases: { name: string; allow: string[]; ctx: AllowContext; expect: string[] }[] = [
  { name: 'empty list allows everything', allow: [], ctx: fastAlias, expect: ['gpu1', 'openrouter'] },
  {
    name: 'the alias itself allows all its candidates',
    allow: ['fast'],
    ctx: fastAlias,
    expect: ['gpu1', 'openrouter'],
  },
  {
    name: 'a generation alias works the same way',
    allow: ['sdxl'],
    ctx: { requested: 'sdxl', alias: 'sdxl', candidates: [{ backend: 'comfy', model: 'sdxl' }] },
    expect: ['comfy'],
  },
  { name: 'a backend name allows that backend through an alias', allow: ['gpu1'], ctx: fastAlias, expect: ['gpu1'] },
  { name: 'a backend name allows that backend for a bare id', allow: ['gpu2'], ctx: bareQwen, expect: ['gpu2'] },
  {
    name: 'a backend/model pair pins that pair',
    allow: ['openrouter/qwen/qwen3-8b'],
    ctx: fastAlias,
    expect: ['openrouter'],
  },
  { name: 'a bare model id allows it on every backend', allow: ['qwen3'], ctx: bareQwen, expect: ['gpu1', 'gpu2'] },
  {
    name: 'a bare model id with a slash matches the model id',
    allow: ['qwen/qwen3-8b'],
    ctx: fastAlias,
    expect: ['openrouter'],
  },
  {
    name: 'unrelated entries allow nothing',
    allow: ['slow', 'gpu9', 'llama3', 'gpu2/qwen3-8b'],
    ctx: fastAlias,
    expect: [],
  },
  {
    name: 'another alias does not unlock this one',
    allow: ['slow'],
    ctx: { ...bareQwen, requested: 'slow-ish' },
    expect: [],
  },
];

for (const c of cases) {
  test(`filterAllowed: ${c.name}`, () => {
    assert.deepEqual(
      filterAllowed(c.allow, c.ctx).map((x) => x.backend),
      c.expect,
    );
  });
}

test('filterAllowed keeps the routing order of candidates', () => {
  const ctx: AllowContext = {
    requested: 'm',
    candidates: [
      { backend: 'b', model: 'm' },
      { backend: 'a', model: 'm' },
      { backend: 'c', model: 'm' },
    ],
  };
  assert.deepEqual(
    filterAllowed(['c', 'b'], ctx).map((x) => x.backend),
    ['b', 'c'],
  );
});

test('isListedModelVisible applies the same rules to /v1/models entries', () => {
  const listed = (id: string) => ({ id, object: 'model' as const, created: 0, owned_by: 'test' });
  const alias = { model: listed('fast'), alias: true, candidates: fastAlias.candidates };
  const pinned = { model: listed('gpu2/qwen3'), alias: false, candidates: [{ backend: 'gpu2', model: 'qwen3' }] };
  const bare = { model: listed('qwen3'), alias: false, candidates: bareQwen.candidates };

  assert.equal(isListedModelVisible([], alias), true);
  assert.equal(isListedModelVisible(['fast'], alias), true);
  assert.equal(isListedModelVisible(['gpu1'], alias), true, 'alias mapping onto an allowed backend');
  assert.equal(isListedModelVisible(['gpu2'], alias), false);

  assert.equal(isListedModelVisible(['gpu2'], pinned), true);
  assert.equal(isListedModelVisible(['gpu2/qwen3'], pinned), true);
  assert.equal(isListedModelVisible(['qwen3'], pinned), true);
  assert.equal(isListedModelVisible(['gpu1'], pinned), false);
  assert.equal(isListedModelVisible(['fast'], pinned), false);

  assert.equal(isListedModelVisible(['gpu2'], bare), true);
  assert.equal(isListedModelVisible(['gpu1/qwen3'], bare), true);
  assert.equal(isListedModelVisible(['llama3'], bare), false);
});
