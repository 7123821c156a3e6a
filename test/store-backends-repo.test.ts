import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { BackendSpec } from '../src/config/types.ts';
import { BackendsRepo } from '../src/store/backends-repo.ts';
import { openStore } from '../src/store/db.ts';
import type { SecretBox } from '../src/store/secret-box.ts';

/** A trivial reversible box: enough to tell encrypted from clear text. */
const fakeBox: SecretBox = {
  encrypt: (plain) => `box:${Buffer.from(plain).toString('base64')}`,
  decrypt: (cipher) => {
    if (!cipher.startsWith('box:')) throw new Error('foreign ciphertext');
    return Buffer.from(cipher.slice(4), 'base64').toString();
  },
  digest: (plain) => `digest:${plain}`,
};

const openrouter: BackendSpec = {
  name: 'openrouter',
  url: 'https://openrouter.ai/api',
  type: 'openai',
  enabled: true,
  api_key: 'sk-or-v1-very-secret',
  paid: true,
  local: false,
  chat_only: true,
  serverless_only: false,
};
const gpu1: BackendSpec = {
  name: 'gpu1',
  url: 'http://10.0.0.5:8080',
  type: 'openai',
  enabled: true,
  max_concurrent: 1,
  paid: false,
  local: true,
  chat_only: false,
  serverless_only: false,
  host: 'gpu1',
};

function setUp(t: import('node:test').TestContext) {
  const dir = mkdtempSync(join(tmpdir(), 'llm-gateway-store-'));
  const db = openStore(dir);
  t.after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { db, repo: new BackendsRepo(db, fakeBox) };
}

test('backends round-trip in insertion order, api_key included', (t) => {
  const { repo } = setUp(t);
  repo.upsert(openrouter);
  repo.upsert(gpu1);
  assert.deepEqual(repo.list(), [openrouter, gpu1]);
  assert.deepEqual(repo.get('gpu1'), gpu1);
  assert.equal(repo.get('nope'), undefined);
});

test('the api_key is stored encrypted, never in clear', (t) => {
  const { db, repo } = setUp(t);
  repo.upsert(openrouter);
  const row = db.prepare('SELECT * FROM backends WHERE name = ?').get('openrouter') as Record<string, unknown>;
  const raw = JSON.stringify(row);
  assert.ok(!raw.includes('sk-or-v1-very-secret'), `clear-text key in ${raw}`);
  assert.ok(raw.includes(fakeBox.encrypt('sk-or-v1-very-secret')), 'the ciphertext from the box is what is stored');
});

test('upsert replaces the whole spec; removing the api_key removes it; delete reports existence', (t) => {
  const { repo } = setUp(t);
  repo.upsert(openrouter);
  repo.upsert(gpu1);
  const { api_key: _dropped, ...withoutKey } = openrouter;
  repo.upsert({ ...withoutKey, enabled: false });
  assert.deepEqual(repo.get('openrouter'), { ...withoutKey, enabled: false });
  assert.deepEqual(
    repo.list().map((b) => b.name),
    ['openrouter', 'gpu1'],
    'an update keeps the position',
  );
  assert.equal(repo.delete('openrouter'), true);
  assert.equal(repo.delete('openrouter'), false);
  assert.deepEqual(repo.list(), [gpu1]);
});
