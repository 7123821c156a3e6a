/**
 * POST /admin/api/backup: admin only, a label and never a path from the client, a folder under
 * backup_dir with a manifest whose sizes, sha256, schema versions and integrity verdicts are the
 * copies' own, and one backup at a time (409).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyRequest } from 'fastify';
import Database from 'better-sqlite3';
import { BackupService } from '../src/admin/backup-service.ts';
import { GatewayError } from '../src/errors.ts';
import { JOBS_MIGRATIONS } from '../src/media/jobs/migrations.ts';
import { adminBackupRoutes } from '../src/routes/admin-backup.ts';
import { installErrorHandlers } from '../src/routes/error-handler.ts';
import { sha256File, type Manifest } from '../src/store/backup/manifest.ts';
import { STATS_MIGRATIONS } from '../src/store/calls-migrations.ts';
import { STORE_MIGRATIONS } from '../src/store/migrations.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { adminApi, chatCall } from './helpers/admin-api.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const MASTER = 'sk-master-backup-test';
const newest = (m: readonly { version: number }[]) => Math.max(...m.map((x) => x.version));
const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
const tmp = tempDirs('llmgw-backup-api-');

describe('POST /admin/api/backup on a running gateway', () => {
  let fake: FakeBackend;
  let gw: TestGateway;
  const api = adminApi(() => gw.url, MASTER);

  before(async () => {
    fake = await startFake('vllm', { models: ['m'] });
    // the call log writes only when asked to: a backup must write it first
    gw = await startGateway([{ name: 'box', url: fake.url }], { api_key: MASTER, stats_flush_ms: 600_000 });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  test('needs an admin: 401 without a key, 403 with a user key', async () => {
    const { key } = gw.gateway.users.create({ name: 'plain' });
    const none = await api('POST', '/admin/api/backup', {}, null);
    assert.equal(none.status, 401);
    assert.equal(typeof none.json.error.message, 'string');
    const user = await api('POST', '/admin/api/backup', {}, key);
    assert.equal(user.status, 403);
    assert.equal(user.json.error.type, 'permission_error');
    assert.equal(existsSync(join(gw.storeDir, 'backups')), false, 'nothing written');
  });

  test('a label is short lower-case words; anything path-like or extra is a 400 naming it', async () => {
    for (const label of ['../x', 'a/b', 'UPPER', '', 'x'.repeat(41), '..', 7]) {
      const res = await api('POST', '/admin/api/backup', { label });
      assert.equal(res.status, 400, JSON.stringify(label));
      assert.equal(res.json.error.param, 'label');
      assert.equal(res.json.error.code, 'invalid_label');
      assert.equal(res.json.error.type, 'invalid_request_error');
    }
    const extra = await api('POST', '/admin/api/backup', { label: 'ok', path: '/tmp/elsewhere' });
    assert.equal(extra.status, 400);
    assert.equal(extra.json.error.param, 'path');
    assert.equal((await api('POST', '/admin/api/backup', ['x'])).status, 400);
    const raw = (type: string, body: string) =>
      fetch(`${gw.url}/admin/api/backup`, {
        method: 'POST',
        headers: { authorization: `Bearer ${MASTER}`, 'content-type': type },
        body,
      });
    const broken = await raw('application/json', '{"label":');
    assert.equal(broken.status, 400);
    assert.equal(((await broken.json()) as { error: { code: string } }).error.code, 'invalid_json');
    assert.equal((await raw('text/plain', 'label=x')).status, 415);
    assert.equal(existsSync(join(gw.storeDir, 'backups')), false, 'nothing written');
  });

  test('backup_dir comes from config.yaml only: the settings API refuses it', async () => {
    const res = await api('PUT', '/admin/api/settings/backup_dir', { value: '/tmp/elsewhere' });
    assert.equal(res.status, 400);
    assert.equal(gw.gateway.settings.get('backup_dir'), undefined);
  });

  test('201 with the manifest; every file is described as it is on disk', async () => {
    const chat = chatCall(() => gw.url, MASTER);
    assert.equal((await chat('m')).status, 200);
    const res = await api('POST', '/admin/api/backup', { label: 'before-upgrade' });
    assert.equal(res.status, 201, res.text);
    const { folder, path, manifest } = res.json as { folder: string; path: string; manifest: Manifest };
    assert.match(folder, /^backup-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z-before-upgrade$/);
    assert.equal(path, join(gw.storeDir, 'backups', folder), 'default backup_dir: <store_dir>/backups');
    assert.deepEqual(readdirSync(join(gw.storeDir, 'backups')), [folder], 'no temporary folder left');
    assert.deepEqual(JSON.parse(readFileSync(join(path, 'manifest.json'), 'utf8')), manifest);
    assert.equal(manifest.gateway_version, version);
    assert.equal(manifest.taken_by, 'gateway');
    assert.equal(manifest.label, 'before-upgrade');
    assert.ok(Math.abs(Date.parse(manifest.created_at) - Date.now()) < 60_000, manifest.created_at);
    assert.deepEqual(
      manifest.files.map((f) => f.name),
      ['store.db', 'stats.db', 'jobs.db', 'secret.key'],
    );
    const schema: Record<string, number> = {
      'store.db': newest(STORE_MIGRATIONS),
      'stats.db': newest(STATS_MIGRATIONS),
      'jobs.db': newest(JOBS_MIGRATIONS),
    };
    for (const f of manifest.files) {
      const file = join(path, f.name);
      assert.equal(f.bytes, statSync(file).size, f.name);
      assert.equal(f.sha256, await sha256File(file), f.name);
      assert.equal(statSync(file).mode & 0o777, 0o600, f.name);
      if (f.kind === 'file') continue;
      assert.equal(f.integrity, 'ok', f.name);
      assert.equal(f.schema_version, schema[f.name], f.name);
      assert.equal(existsSync(`${file}-wal`) || existsSync(`${file}-shm`), false, 'a copy is one file');
    }
    assert.equal(statSync(path).mode & 0o777, 0o700);
    const secret = manifest.files.find((f) => f.name === 'secret.key')!;
    assert.equal(secret.sha256, await sha256File(join(gw.storeDir, 'secret.key')));
    // the call answered before the backup is in its stats.db (the call log is written first)
    const copy = new Database(join(path, 'stats.db'), { readonly: true });
    const rows = copy.prepare('SELECT endpoint, status FROM calls').all() as { status: number }[];
    copy.close();
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.status, 200);
  });

  test('without a label the folder is backup-<time>', async () => {
    const res = await api('POST', '/admin/api/backup');
    assert.equal(res.status, 201, res.text);
    assert.match(res.json.folder, /^backup-[0-9TZ-]+Z$/);
    assert.equal(res.json.manifest.label, undefined);
  });
});

test('backup_dir set in config.yaml: the folders go there', async () => {
  const dir = join(tmp(), 'elsewhere');
  const gw = await startGateway([], { api_key: MASTER, backup_dir: dir });
  try {
    const res = await adminApi(() => gw.url, MASTER)('POST', '/admin/api/backup', { label: 'x' });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(readdirSync(dir), [res.json.folder]);
    assert.equal(existsSync(join(gw.storeDir, 'backups')), false);
  } finally {
    await gw.close();
  }
});

test('a second backup while one is being written is a 409; the first completes', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let started!: () => void;
  const copying = new Promise<void>((r) => (started = r));
  const dir = tmp();
  const service = new BackupService({
    databases: () => [
      {
        name: 'store.db',
        backup: async (to) => {
          started();
          await gate;
          const db = new Database(to);
          db.exec('CREATE TABLE t (x)');
          db.close();
        },
      },
    ],
    files: () => [],
    dir: () => dir,
    gatewayVersion: 'test',
  });
  const app = Fastify();
  installErrorHandlers(app);
  const requireAdmin = (req: FastifyRequest) => {
    if (req.headers.authorization !== 'Bearer admin')
      throw new GatewayError({ status: 401, code: 'invalid_api_key', message: 'No key.' });
  };
  await app.register(adminBackupRoutes, { backups: service, requireAdmin });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const api = adminApi(() => base, 'admin');
    const first = api('POST', '/admin/api/backup', { label: 'first' });
    await copying;
    assert.equal(service.status().running, true);
    const second = await api('POST', '/admin/api/backup', { label: 'second' });
    assert.equal(second.status, 409);
    assert.equal(second.json.error.code, 'backup_in_progress');
    assert.equal(second.json.error.type, 'invalid_request_error');
    release();
    const done = await first;
    assert.equal(done.status, 201, done.text);
    assert.deepEqual(readdirSync(dir), [done.json.folder]);
    assert.equal(service.status().running, false);
    assert.equal(service.status().last?.folder, done.json.folder);
    // and once it is done, the next one runs
    assert.equal((await api('POST', '/admin/api/backup', { label: 'third' })).status, 201);
  } finally {
    await app.close();
  }
});

test('a backup that fails leaves no folder behind and answers 500 in the OpenAI shape', async () => {
  const dir = tmp();
  const service = new BackupService({
    databases: () => [{ name: 'store.db', backup: async () => Promise.reject(new Error('disk full')) }],
    files: () => [],
    dir: () => dir,
    gatewayVersion: 'test',
  });
  await assert.rejects(service.run({ label: 'x' }), (err: GatewayError) => {
    assert.equal(err.status, 500);
    assert.equal(err.code, 'backup_failed');
    assert.match(err.message, /disk full/);
    return true;
  });
  assert.deepEqual(readdirSync(dir), []);
  assert.equal(service.status().running, false);
});
