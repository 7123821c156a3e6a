/**
 * A backend's secrets stay secret:
 * - a backend whose 401 echoes the key the gateway sent it has that error stored redacted (the
 *   registry's last error), so no copy reaches /health, /admin/api/backends, the console or
 *   the log — from a discovery probe and from a proxied call alike;
 * - a backend URL with userinfo (`http://admin:pw@host`) is shown with its password masked
 *   everywhere, kept encrypted in store.db, and a masked URL sent back keeps the password;
 * - store.db, stats.db, jobs.db and their -wal/-shm are 0600, their folders 0700, also when an
 *   older version left them readable.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { adminApi } from './helpers/admin-api.ts';
import { startGateway } from './helpers/gateway.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'sk-master-secrets-test-0123456789';
const BACKEND_KEY = 'sk-backend-echoed-9f8e7d6c5b4a3210';
const URL_PASSWORD = 'pw-s3cret-in-url';

/** Answers every request 401, quoting the credential it was sent (some servers do). */
async function startEchoingBackend(): Promise<{ url: string; port: number; server: Server; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    const sent = String(req.headers.authorization ?? req.headers['x-api-key'] ?? '');
    seen.push(sent);
    res.writeHead(401, { 'content-type': 'application/json' });
    const message = `Incorrect API key provided: ${sent}. You can find your API key at …`;
    res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', code: 'invalid_api_key' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, port, server, seen };
}

function captureLog(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

describe('a backend that echoes its key', () => {
  test('the stored error is redacted: /health, admin API, console and log hold no copy of the key', async (t) => {
    const echo = await startEchoingBackend();
    const log = captureLog();
    const gw = await startGateway(
      [
        // configured models: up despite the refused list, so a call reaches it and the proxy records the 401
        { name: 'listed', url: echo.url, api_key: BACKEND_KEY, models: ['m1'] },
        // no models: the discovery probe's 401 marks it down
        { name: 'probed', url: echo.url, api_key: BACKEND_KEY },
      ],
      { api_key: MASTER, log_level: 'warn' },
      { logStream: log.stream },
    );
    t.after(async () => {
      await gw.close();
      echo.server.close();
    });

    const call = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'listed/m1', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.notEqual(call.status, 200);
    assert.doesNotMatch(await call.text(), new RegExp(BACKEND_KEY));

    const registry = gw.gateway.registry;
    for (const name of ['listed', 'probed']) {
      const error = registry.get(name)!.error;
      assert.ok(error, `${name} has a last error`);
      assert.equal(error.kind, 'auth');
      assert.match(error.detail, /\[redacted\]/, `${name}: the echo is there, the key is not`);
      assert.doesNotMatch(error.detail, new RegExp(BACKEND_KEY));
    }

    const admin = { authorization: `Bearer ${MASTER}` };
    const health = await (await fetch(`${gw.url}/health`, { headers: admin })).text();
    assert.match(health, /\[redacted\]/);
    const backends = await (await fetch(`${gw.url}/admin/api/backends`, { headers: admin })).text();
    assert.match(backends, /\[redacted\]/);
    const ui = await UiClient.login(gw, MASTER);
    const pages: string[] = [];
    for (const page of ['/ui', '/ui/backends', '/ui/backends/probed/edit', '/ui/backends/listed/edit']) {
      pages.push(await ui.html(page));
    }
    for (const text of [health, backends, ...pages, log.text()]) assert.doesNotMatch(text, new RegExp(BACKEND_KEY));
    assert.match(log.text(), /backend is down/, 'the discovery warning was logged (redacted)');
    assert.match(log.text(), /upstream attempt failed/, 'the failed attempt was logged (redacted)');
  });
});

describe('a backend URL with userinfo', () => {
  test('masked in the admin API and console, encrypted in store.db; a masked URL sent back keeps it', async (t) => {
    const echo = await startEchoingBackend();
    const log = captureLog();
    const fileUrl = `http://admin:${URL_PASSWORD}@127.0.0.1:${echo.port}`;
    const gw = await startGateway(
      [{ name: 'fileside', url: fileUrl }],
      { api_key: MASTER, log_level: 'debug' },
      { logStream: log.stream },
    );
    t.after(async () => {
      await gw.close();
      echo.server.close();
    });
    const api = adminApi(() => gw.url, MASTER);

    const storedUrl = `http://ops:${URL_PASSWORD}@127.0.0.1:${echo.port}/base`;
    const created = await api('POST', '/admin/api/backends', { name: 'stored', url: storedUrl });
    assert.equal(created.status, 201, created.text);
    const listing = await api('GET', '/admin/api/backends');
    const rows = listing.json.data as { name: string; spec: { url: string } }[];
    const urls = Object.fromEntries(rows.map((b) => [b.name, b.spec.url]));
    assert.equal(urls.fileside, `http://admin:***@127.0.0.1:${echo.port}`);
    assert.equal(urls.stored, `http://ops:***@127.0.0.1:${echo.port}/base`);
    assert.doesNotMatch(listing.text, new RegExp(URL_PASSWORD));

    // store.db keeps the userinfo encrypted, and gives the URL back whole
    const db = new Database(join(gw.storeDir, 'store.db'), { readonly: true });
    const row = db.prepare("SELECT spec FROM backends WHERE name = 'stored'").get() as { spec: string };
    db.close();
    assert.doesNotMatch(row.spec, new RegExp(URL_PASSWORD));
    assert.doesNotMatch(row.spec, /ops:/);
    assert.equal(JSON.parse(row.spec).url, `http://127.0.0.1:${echo.port}/base`);
    assert.equal(gw.gateway.storedBackends.get('stored')!.url, storedUrl);

    // the masked URL as the console's form sends it back: the password is kept
    const view = listing.json.data.find((b: { name: string }) => b.name === 'stored');
    const saved = await api('PUT', '/admin/api/backends/stored', { ...view.spec, max_concurrent: 2 });
    assert.equal(saved.status, 200, saved.text);
    const after = gw.gateway.config().backends.find((b) => b.name === 'stored')!;
    assert.equal(after.url, storedUrl);
    assert.equal(after.max_concurrent, 2);
    // a masked URL pointing somewhere else is taken as typed (no password is carried to a new host)
    await api('PUT', '/admin/api/backends/stored', { ...view.spec, url: 'http://ops:***@127.0.0.2:9/base' });
    assert.equal(gw.gateway.config().backends.find((b) => b.name === 'stored')!.url, 'http://ops:***@127.0.0.2:9/base');

    const ui = await UiClient.login(gw, MASTER);
    for (const page of ['/ui/backends', '/ui/backends/fileside/edit', '/ui', '/ui/server']) {
      assert.doesNotMatch(await ui.html(page), new RegExp(URL_PASSWORD), page);
    }
    const health = await (await fetch(`${gw.url}/health`, { headers: { authorization: `Bearer ${MASTER}` } })).text();
    assert.doesNotMatch(health, new RegExp(URL_PASSWORD));
    assert.doesNotMatch(log.text(), new RegExp(URL_PASSWORD));

    // the userinfo is the backend's Basic credential; its echo is redacted like a key
    const basic = Buffer.from(`admin:${URL_PASSWORD}`).toString('base64');
    assert.ok(echo.seen.includes(`Basic ${basic}`), "the probe sent the URL's userinfo as Basic auth");
    const error = gw.gateway.registry.get('fileside')!.error!;
    assert.match(error.detail, /Basic \[redacted\]/);
    assert.doesNotMatch(JSON.stringify(error), new RegExp(basic));
  });
});

describe('data files are private', () => {
  const mode = (path: string) => statSync(path).mode & 0o777;
  const dbFiles = (storeDir: string) => [
    ...['store.db', 'stats.db'].flatMap((f) => ['', '-wal', '-shm'].map((suffix) => join(storeDir, `${f}${suffix}`))),
    ...['jobs.db', 'jobs.db-wal', 'jobs.db-shm'].map((f) => join(storeDir, 'jobs', f)),
  ];

  test('created 0600 in 0700 folders, and tightened when found readable', async (t) => {
    const parent = mkdtempSync(join(tmpdir(), 'llmgw-modes-'));
    t.after(() => rmSync(parent, { recursive: true, force: true }));
    const storeDir = join(parent, 'store');
    const gw = await startGateway([], { api_key: MASTER }, { storeDir });
    // a write to each database, so that every -wal and -shm exists
    await fetch(`${gw.url}/v1/models`, { headers: { authorization: 'Bearer wrong-key-for-a-refusal' } });
    await gw.gateway.callLog.flush();
    for (const file of dbFiles(storeDir)) {
      assert.ok(existsSync(file), `${file} exists`);
      assert.equal(mode(file).toString(8), '600', file);
    }
    assert.equal(mode(join(storeDir, 'secret.key')).toString(8), '600');
    assert.equal(mode(storeDir).toString(8), '700');
    assert.equal(mode(join(storeDir, 'jobs')).toString(8), '700');
    await gw.close();

    // an older version's modes: opened again, everything is tightened
    chmodSync(storeDir, 0o755);
    chmodSync(join(storeDir, 'jobs'), 0o755);
    for (const dir of [storeDir, join(storeDir, 'jobs')]) {
      for (const file of readdirSync(dir).filter((f) => f.includes('.db'))) chmodSync(join(dir, file), 0o644);
    }
    const again = await startGateway([], { api_key: MASTER }, { storeDir });
    t.after(() => again.close());
    for (const file of dbFiles(storeDir).filter((f) => existsSync(f))) {
      assert.equal(mode(file).toString(8), '600', file);
    }
    assert.equal(mode(storeDir).toString(8), '700');
    assert.equal(mode(join(storeDir, 'jobs')).toString(8), '700');
    assert.ok(readFileSync(join(storeDir, 'secret.key')).length === 32);
  });
});
