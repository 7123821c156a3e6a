/**
 * `<store_dir>/gateway.lock` and the restore's checks: a running gateway holds the lock and lets
 * it go at close; a live process's lock stops a second gateway and a restore, a stale one (its
 * process gone, or its pid reused by a process that started later) is taken over; a restore
 * touches nothing unless every file matches its manifest.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { GatewayLock, LOCK_FILE, LockHeldError } from '../src/store/backup/lock.ts';
import { BackupInvalidError } from '../src/store/backup/manifest.ts';
import { restoreBackup } from '../src/store/backup/restore.ts';
import { adminApi } from './helpers/admin-api.ts';
import { startGateway } from './helpers/gateway.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const MASTER = 'sk-master-backup-lock';
const tmp = tempDirs('llmgw-backup-lock-');

/** A process that is alive and is not this one: the test runner's parent. */
const otherLivePid = process.ppid;

/** The pid of a process that ran and has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((r) => child.on('exit', r));
  return child.pid!;
}

const writeLock = (dir: string, holder: object) => writeFileSync(join(dir, LOCK_FILE), JSON.stringify(holder));
const lockOf = (dir: string) => JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'));

describe('gateway.lock', () => {
  test('a running gateway holds it with its pid and removes it at close', async () => {
    const storeDir = tmp();
    const gw = await startGateway([], {}, { storeDir });
    const held = lockOf(storeDir);
    assert.equal(held.pid, process.pid);
    assert.equal(held.role, 'gateway');
    assert.equal(GatewayLock.liveHolder(storeDir)?.pid, process.pid);
    await gw.close();
    assert.equal(existsSync(join(storeDir, LOCK_FILE)), false);
    assert.equal(GatewayLock.liveHolder(storeDir), undefined);
  });

  test('a gateway does not start on a store_dir a live process holds, and says who holds it', async () => {
    const storeDir = tmp();
    writeLock(storeDir, { pid: otherLivePid, role: 'gateway' });
    await assert.rejects(startGateway([], {}, { storeDir }), (err: Error) => {
      assert.ok(err instanceof LockHeldError);
      assert.match(err.message, new RegExp(`a gateway \\(pid ${otherLivePid}\\b.*stop it first`));
      return true;
    });
    assert.equal(lockOf(storeDir).pid, otherLivePid, 'the holder keeps its lock');
    assert.equal(existsSync(join(storeDir, 'store.db')), false, 'the store was not opened');
  });

  test('a stale lock is taken over: its process is gone, or its pid now belongs to a later process', async () => {
    const storeDir = tmp();
    writeLock(storeDir, { pid: await deadPid(), role: 'gateway' });
    const first = GatewayLock.acquire(storeDir);
    assert.equal(lockOf(storeDir).pid, process.pid);
    first.release();
    writeLock(storeDir, { pid: otherLivePid, role: 'gateway', start: '1' });
    const second = GatewayLock.acquire(storeDir);
    assert.equal(lockOf(storeDir).pid, process.pid);
    second.release();
    writeFileSync(join(storeDir, LOCK_FILE), '{"pi'); // half written by a crash
    GatewayLock.acquire(storeDir).release();
    assert.equal(existsSync(join(storeDir, LOCK_FILE)), false);
  });

  test("a release removes only the taker's own lock", () => {
    const storeDir = tmp();
    const first = GatewayLock.acquire(storeDir);
    const second = GatewayLock.acquire(storeDir); // the same process again: taken over
    first.release();
    assert.equal(existsSync(join(storeDir, LOCK_FILE)), true, "the later taker's lock stays");
    second.release();
    assert.equal(existsSync(join(storeDir, LOCK_FILE)), false);
  });
});

describe('restore refuses, and touches nothing', () => {
  /** A backup of a small gateway store, and a store_dir with a live gateway's files to restore into. */
  async function fixture() {
    const gw = await startGateway([], { api_key: MASTER }, { storeDir: tmp() });
    const api = adminApi(() => gw.url, MASTER);
    assert.equal((await api('POST', '/admin/api/users', { name: 'kept' })).status, 201);
    const backup = await api('POST', '/admin/api/backup', { label: 'fixture' });
    assert.equal(backup.status, 201, backup.text);
    await gw.close();
    const target = tmp();
    return { from: backup.json.path as string, dirs: { storeDir: target, jobsDir: join(target, 'jobs') } };
  }

  test('while a live process holds the lock (this one, or another)', async () => {
    const { from, dirs } = await fixture();
    writeLock(dirs.storeDir, { pid: otherLivePid, role: 'gateway' });
    await assert.rejects(restoreBackup({ from, dirs }), LockHeldError);
    writeLock(dirs.storeDir, { pid: process.pid, role: 'gateway' });
    await assert.rejects(restoreBackup({ from, dirs }), LockHeldError);
    assert.deepEqual(readdirSync(dirs.storeDir), [LOCK_FILE]);
    writeLock(dirs.storeDir, { pid: await deadPid(), role: 'gateway' });
    const report = await restoreBackup({ from, dirs });
    assert.equal(report.restored.length, 4, 'a stale lock does not stop it');
  });

  test('a file that does not match its sha256', async () => {
    const { from, dirs } = await fixture();
    appendFileSync(join(from, 'secret.key'), 'x');
    await assert.rejects(restoreBackup({ from, dirs }), /secret\.key is \d+ bytes, the manifest says/);
    const manifest = JSON.parse(readFileSync(join(from, 'manifest.json'), 'utf8'));
    const entry = manifest.files.find((f: { name: string }) => f.name === 'secret.key');
    entry.bytes += 1;
    writeFileSync(join(from, 'manifest.json'), JSON.stringify(manifest));
    await assert.rejects(restoreBackup({ from, dirs }), /secret\.key does not match the sha256/);
    assert.deepEqual(readdirSync(dirs.storeDir), []);
  });

  test('a manifest that names a path, or a database newer than this gateway', async () => {
    const { from, dirs } = await fixture();
    const good = readFileSync(join(from, 'manifest.json'), 'utf8');
    const manifest = JSON.parse(good);
    manifest.files[0].name = '../../etc/passwd';
    writeFileSync(join(from, 'manifest.json'), JSON.stringify(manifest));
    await assert.rejects(restoreBackup({ from, dirs }), (err: Error) => {
      assert.ok(err instanceof BackupInvalidError);
      assert.match(err.message, /names an unexpected file: "\.\.\/\.\.\/etc\/passwd"/);
      return true;
    });
    writeFileSync(join(from, 'manifest.json'), good);
    await assert.rejects(
      restoreBackup({ from, dirs, newestKnown: { 'store.db': 1 } }),
      /store\.db has schema version \d+, newer than this gateway's 1/,
    );
    writeFileSync(join(from, 'manifest.json'), '{"format": 99, "files": []}');
    await assert.rejects(restoreBackup({ from, dirs }), /not a backup manifest/);
    assert.deepEqual(readdirSync(dirs.storeDir), []);
  });
});
