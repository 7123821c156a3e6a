import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openStore, type Db } from '../src/store/db.ts';
import { SettingsRepo } from '../src/store/settings-repo.ts';

/** A store in a fresh temp dir; `reopen()` opens it again (as after a restart). All closed and removed after the test. */
function tempStore(t: import('node:test').TestContext): { db: Db; reopen(): Db } {
  const dir = mkdtempSync(join(tmpdir(), 'llm-gateway-store-'));
  const handles: Db[] = [];
  const open = () => {
    const db = openStore(dir);
    handles.push(db);
    return db;
  };
  t.after(() => {
    for (const db of handles) if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { db: open(), reopen: open };
}

test('settings round-trip as JSON values and survive reopening the store', (t) => {
  const { db, reopen } = tempStore(t);
  const settings = new SettingsRepo(db);
  assert.deepEqual(settings.all(), {});
  assert.equal(settings.get('park_timeout_s'), undefined);

  settings.set('park_timeout_s', 5);
  settings.set('model_prefix', false);
  settings.set('virtual_models', { fast: { gpu1: 'qwen3-8b' } });
  settings.set('park_timeout_s', 7); // overwrite
  assert.equal(settings.get('park_timeout_s'), 7);
  assert.equal(settings.get('model_prefix'), false);

  db.close();
  assert.deepEqual(new SettingsRepo(reopen()).all(), {
    model_prefix: false,
    park_timeout_s: 7,
    virtual_models: { fast: { gpu1: 'qwen3-8b' } },
  });
});

test('delete removes a key and says whether it existed; undefined is refused', (t) => {
  const { db } = tempStore(t);
  const settings = new SettingsRepo(db);
  settings.set('log_level', 'debug');
  assert.equal(settings.delete('log_level'), true);
  assert.equal(settings.delete('log_level'), false);
  assert.equal(settings.get('log_level'), undefined);
  assert.throws(() => settings.set('log_level', undefined), TypeError);
});
