/**
 * The acceptance of backups: a backup taken over the admin API while many chat calls go through
 * the gateway (the call log being written) and users and backends are being added restores, into
 * a fresh store, to databases whose integrity check passes and which hold every call, user and
 * backend the gateway had before the backup was asked for; a gateway started on the restored
 * store serves them (a user's key made before the backup still works: secret.key came back).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { restoreBackup } from '../src/store/backup/restore.ts';
import { startFake } from './fakes/index.ts';
import { adminApi, chatCall, type ApiAnswer } from './helpers/admin-api.ts';
import { allCallIds } from './helpers/call-ids.ts';
import { startGateway } from './helpers/gateway.ts';
import { tempDirs } from './helpers/temp-dirs.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'sk-master-backup-load';
const WORKERS = 16;
const tmp = tempDirs('llmgw-backup-load-');

type Api = (method: string, path: string, body?: unknown, key?: string | null) => Promise<ApiAnswer>;

const names = async (api: Api, path: string): Promise<string[]> =>
  ((await api('GET', path)).json.data as { name: string }[]).map((x) => x.name).sort();

test('a backup under a write load restores to a sound store holding everything committed before it', async () => {
  const fake = await startFake('vllm', { models: ['m'], slots: 8, knobs: { latencyMs: 2 } });
  const gw = await startGateway([{ name: 'box', url: fake.url }], { api_key: MASTER, stats_flush_ms: 10 });
  const api = adminApi(() => gw.url, MASTER);
  let stop = false;
  let answered = 0;
  let failed = 0;
  const userKeys: string[] = [];
  for (let i = 0; i < 3; i++) {
    const made = await api('POST', '/admin/api/users', { name: `load-${i}` });
    assert.equal(made.status, 201, made.text);
    userKeys.push(made.json.key);
  }
  const caller = async (n: number) => {
    const chat = chatCall(() => gw.url, userKeys[n % userKeys.length]!);
    for (let i = 0; !stop; i++) {
      const res = await chat('m', i % 3 === 0);
      await res.arrayBuffer();
      if (res.status === 200) answered++;
      else failed++;
    }
  };
  let writes = 0;
  const writer = async () => {
    for (let i = 0; !stop; i++) {
      const user = await api('POST', '/admin/api/users', { name: `writer-${i}` });
      const backend = await api('POST', '/admin/api/backends', { name: `extra-${i}`, url: fake.url });
      assert.equal(user.status, 201, user.text);
      assert.equal(backend.status, 201, backend.text);
      writes++;
    }
  };
  const load = [...Array.from({ length: WORKERS }, (_, n) => caller(n)), writer()];
  try {
    await waitFor(() => answered >= 150 && writes >= 3, 'calls and writes under way', 60_000);
    // what the gateway holds just before the backup is asked for
    const callIds = await allCallIds(api);
    const users = await names(api, '/admin/api/users');
    const backends = await names(api, '/admin/api/backends');
    assert.ok(callIds.length >= 150, `${callIds.length} calls`);
    const backup = await api('POST', '/admin/api/backup', { label: 'under-load' });
    assert.equal(backup.status, 201, backup.text);
    const atBackup = answered;
    // the load goes on after the backup: the gateway kept serving while it was written
    await waitFor(() => answered >= atBackup + 50, 'calls after the backup', 60_000);
    stop = true;
    await Promise.all(load);
    assert.equal(failed, 0, 'no call failed during the backup');

    const storeDir = join(tmp(), 'store');
    const dirs = { storeDir, jobsDir: join(storeDir, 'jobs') };
    const report = await restoreBackup({ from: backup.json.path, dirs });
    assert.equal(report.restored.length, 4);
    for (const file of [join(storeDir, 'store.db'), join(storeDir, 'stats.db'), join(dirs.jobsDir, 'jobs.db')]) {
      const db = new Database(file, { readonly: true });
      assert.equal(db.pragma('integrity_check', { simple: true }), 'ok', file);
      db.close();
    }

    const restored = await startGateway([{ name: 'box', url: fake.url }], { api_key: MASTER }, { storeDir });
    try {
      const rapi = adminApi(() => restored.url, MASTER);
      const have = new Set(await allCallIds(rapi));
      const missing = callIds.filter((id) => !have.has(id));
      assert.deepEqual(missing, [], `${missing.length} of ${callIds.length} calls missing`);
      const restoredUsers = new Set(await names(rapi, '/admin/api/users'));
      assert.deepEqual(
        users.filter((u) => !restoredUsers.has(u)),
        [],
      );
      const restoredBackends = new Set(await names(rapi, '/admin/api/backends'));
      assert.deepEqual(
        backends.filter((b) => !restoredBackends.has(b)),
        [],
      );
      // a key made before the backup is recognised (secret.key restored with the digests)
      const res = await chatCall(() => restored.url, userKeys[0]!)('m');
      assert.equal(res.status, 200, await res.text());
    } finally {
      await restored.close();
    }
  } finally {
    stop = true;
    await Promise.allSettled(load);
    await gw.close();
    await fake.close();
  }
});
