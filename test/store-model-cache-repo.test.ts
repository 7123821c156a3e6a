import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ModelInfo } from '../src/backends/types.ts';
import { openStore, type Db } from '../src/store/db.ts';
import { ModelCacheRepo } from '../src/store/model-cache-repo.ts';

const openrouterModels: ModelInfo[] = [
  {
    id: 'qwen/qwen3-8b',
    created: 1745000000,
    owned_by: 'qwen',
    pricing: { input: 0.035, output: 0.138 },
    context_length: 40960,
  },
  { id: 'meta-llama/llama-3.3-70b-instruct', pricing: { input: 0.13, output: 0.4, cache_read: 0.05 } },
];
const gpuModels: ModelInfo[] = [{ id: 'qwen3-8b', owned_by: 'llamacpp' }];

test('the last model lists survive a restart, so routing works before the first poll', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'llm-gateway-store-'));
  const handles: Db[] = [];
  t.after(() => {
    for (const h of handles) if (h.open) h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const db = openStore(dir);
  handles.push(db);
  const cache = new ModelCacheRepo(db);
  assert.equal(cache.loadAll().size, 0);
  cache.save('openrouter', [{ id: 'stale' }]);
  cache.save('openrouter', openrouterModels); // replaces
  cache.save('gpu1', gpuModels);
  cache.save('empty', []);
  db.close();

  const reopened = openStore(dir);
  handles.push(reopened);
  const loaded = new ModelCacheRepo(reopened).loadAll();
  assert.deepEqual(
    loaded,
    new Map([
      ['empty', []],
      ['gpu1', gpuModels],
      ['openrouter', openrouterModels],
    ]),
  );
});

test('delete forgets one backend and says whether there was a list', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'llm-gateway-store-'));
  const db = openStore(dir);
  t.after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const cache = new ModelCacheRepo(db);
  cache.save('gpu1', gpuModels);
  cache.save('openrouter', openrouterModels);
  assert.equal(cache.delete('gpu1'), true);
  assert.equal(cache.delete('gpu1'), false);
  assert.deepEqual([...cache.loadAll().keys()], ['openrouter']);
});
