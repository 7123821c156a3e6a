/**
 * `npm run backup -- <dir>` and `npm run restore -- <dir>` as processes (the scripts run with
 * the project's tsx, the config found as the server finds it): a backup of a running gateway's
 * store_dir taken while calls go through it holds every call committed before it; a restore is
 * refused while that gateway runs and, once it stopped, puts the backup in place (the replaced
 * files and their -wal/-shm moved aside), and a gateway started on it has the calls.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { parseDataCommand } from '../src/backup-cli.ts';
import { sha256File, type Manifest } from '../src/store/backup/manifest.ts';
import { startFake } from './fakes/index.ts';
import { adminApi, chatCall } from './helpers/admin-api.ts';
import { startGateway } from './helpers/gateway.ts';
import { tempDirs } from './helpers/temp-dirs.ts';
import { waitFor } from './helpers/wait.ts';
import { allCallIds } from './helpers/call-ids.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MASTER = 'sk-master-backup-cli';
const tmp = tempDirs('llmgw-backup-cli-');

function runScript(script: 'backup' | 'restore', args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; out: string; err: string }>((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `scripts/${script}.ts`, ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('close', (code) => done({ code, out, err }));
  });
}

describe('the command lines', () => {
  test('one folder, an optional --config, --help; anything else is a one-line mistake', () => {
    assert.deepEqual(parseDataCommand(['out']), { kind: 'run', dir: 'out' });
    assert.deepEqual(parseDataCommand(['--config', 'c.yaml', 'out']), { kind: 'run', dir: 'out', config: 'c.yaml' });
    assert.deepEqual(parseDataCommand(['out', '--config=c.yaml']), { kind: 'run', dir: 'out', config: 'c.yaml' });
    assert.deepEqual(parseDataCommand(['-h']), { kind: 'help' });
    assert.equal(parseDataCommand([]).kind, 'error');
    assert.match((parseDataCommand(['a', 'b']) as { message: string }).message, /one folder only/);
    assert.equal(parseDataCommand(['--bogus', 'out']).kind, 'error');
    assert.equal(parseDataCommand(['--config']).kind, 'error');
  });

  test('a usage mistake exits 2; a config file that is not there exits 1 naming it', async () => {
    const none = await runScript('backup', [], {});
    assert.equal(none.code, 2);
    assert.match(none.err, /^backup: name the backup folder/);
    const missing = join(tmp(), 'nope.yaml');
    const bad = await runScript('restore', ['--config', missing, tmp()], {});
    assert.equal(bad.code, 1);
    assert.match(bad.err, /config file not found/);
  });
});

test('npm run backup against a running gateway, then npm run restore: refused while it runs, then done', async () => {
  const fake = await startFake('vllm', { models: ['m'], slots: 8 });
  const storeDir = join(tmp(), 'store');
  const gw = await startGateway(
    [{ name: 'box', url: fake.url }],
    { api_key: MASTER, stats_flush_ms: 10 },
    { storeDir },
  );
  const config = join(tmp(), 'config.yaml');
  writeFileSync(config, `store_dir: ${gw.storeDir}\njobs_dir: ${join(gw.storeDir, 'jobs')}\nbackends: []\n`);
  const env = { LLM_GATEWAY_CONFIG: config };
  const api = adminApi(() => gw.url, MASTER);
  const chat = chatCall(() => gw.url, MASTER);
  let stop = false;
  let answered = 0;
  const load = Array.from({ length: 8 }, async () => {
    while (!stop) {
      const res = await chat('m');
      await res.arrayBuffer();
      if (res.status === 200) answered++;
    }
  });
  let gatewayUp = true;
  try {
    await waitFor(() => answered >= 60, 'calls under way', 60_000);
    const before = await allCallIds(api);
    await gw.gateway.callLog.flush(); // committed, every one of them, before the backup starts
    const out = join(tmp(), 'cli-backup');
    const backup = await runScript('backup', [out], env);
    assert.equal(backup.code, 0, backup.err);
    assert.match(backup.out, /backup written to /);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as Manifest;
    assert.equal(manifest.taken_by, 'cli');
    assert.deepEqual(
      manifest.files.map((f) => f.name),
      ['store.db', 'stats.db', 'jobs.db', 'secret.key'],
    );
    for (const f of manifest.files) {
      assert.equal(f.sha256, await sha256File(join(out, f.name)), f.name);
      if (f.kind === 'sqlite') assert.equal(f.integrity, 'ok', f.name);
    }
    const copy = new Database(join(out, 'stats.db'), { readonly: true });
    const inCopy = new Set((copy.prepare('SELECT id FROM calls').all() as { id: number }[]).map((r) => r.id));
    copy.close();
    assert.deepEqual(
      before.filter((id) => !inCopy.has(id)),
      [],
      'every call committed before the backup',
    );
    // a second backup into the same, now full, folder is refused
    const again = await runScript('backup', [out], env);
    assert.equal(again.code, 1);
    assert.match(again.err, /is not empty/);

    const refused = await runScript('restore', [out], env);
    assert.equal(refused.code, 1, refused.out);
    assert.match(
      refused.err,
      new RegExp(`a gateway \\(pid ${process.pid}[^)]*\\) holds .*gateway\\.lock: stop it first`),
    );
    assert.deepEqual(
      readdirSync(gw.storeDir).filter((f) => /replaced|restoring/.test(f)),
      [],
      'nothing touched',
    );

    stop = true;
    await Promise.all(load);
    const wal = join(gw.storeDir, 'stats.db-wal');
    await gw.close();
    gatewayUp = false;
    // a crashed gateway's leftovers: a -wal that must not be replayed into the restored copy
    writeFileSync(wal, 'not a wal of the restored database');
    const restore = await runScript('restore', [out], env);
    assert.equal(restore.code, 0, restore.err);
    assert.match(restore.out, /restored .*store\.db/);
    const aside = readdirSync(gw.storeDir).filter((f) => f.startsWith('replaced-'));
    assert.equal(aside.length, 1, readdirSync(gw.storeDir).join(' '));
    assert.ok(existsSync(join(gw.storeDir, aside[0]!, 'stats.db-wal')), 'the stale -wal moved aside');
    assert.equal(existsSync(wal), false);
    assert.equal(existsSync(join(gw.storeDir, 'gateway.lock')), false, 'the restore let its lock go');
    for (const f of manifest.files) {
      const dir = f.name === 'jobs.db' ? join(gw.storeDir, 'jobs') : gw.storeDir;
      assert.equal(await sha256File(join(dir, f.name)), f.sha256, `${f.name} is the backup's`);
    }

    const restored = await startGateway(
      [{ name: 'box', url: fake.url }],
      { api_key: MASTER },
      { storeDir: gw.storeDir },
    );
    try {
      const have = new Set(await allCallIds(adminApi(() => restored.url, MASTER)));
      assert.deepEqual(
        before.filter((id) => !have.has(id)),
        [],
      );
    } finally {
      await restored.close();
    }
  } finally {
    stop = true;
    await Promise.allSettled(load);
    if (gatewayUp) await gw.close();
    await fake.close();
  }
});
