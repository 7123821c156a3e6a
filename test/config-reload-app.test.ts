/**
 * Hot reload through a running gateway: editors that save by rename, new backends discovered at
 * once, removed ones out of routing without disturbing in-flight calls, invalid edits kept out.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfigFile } from '../src/config/load.ts';
import { startFake } from './fakes/index.ts';
import { waitFor } from './helpers/wait.ts';

function saveByRename(path: string, text: string): void {
  writeFileSync(`${path}.swp`, text);
  renameSync(`${path}.swp`, path);
}

const configText = (dir: string, backends: { name: string; url: string }[], extra = '') => `
store_dir: ${join(dir, 'store')}
health_check_interval: 300
backends:
${backends.map((b) => `  - name: ${b.name}\n    url: ${b.url}\n`).join('')}
${extra}
`;

test('config reload: add, remove (in-flight survives), reject invalid', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-reload-'));
  const a = await startFake('llamacpp', { models: ['model-a'] });
  const b = await startFake('vllm', { models: ['model-b'] });
  const path = join(dir, 'config.yaml');
  writeFileSync(path, configText(dir, [{ name: 'a', url: a.url }]));
  const loaded = loadConfigFile(path, process.env);
  assert.ok(loaded.ok);
  const { app, gateway } = await buildApp({
    config: loaded.config,
    configSource: path,
    logger: pino({ level: 'silent' }),
    watchConfigPath: path,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => {
    await app.close();
    await a.close();
    await b.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const ids = async () =>
    ((await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string }[] }).data.map((d) => d.id);
  await waitFor(() => gateway.registry.get('a')?.healthy === true, 'a discovered');
  await new Promise((r) => setTimeout(r, 300)); // let the watcher get ready

  // add b by a rename-and-replace save: discovered at once
  saveByRename(
    path,
    configText(dir, [
      { name: 'a', url: a.url },
      { name: 'b', url: b.url },
    ]),
  );
  await waitFor(() => gateway.registry.get('b')?.healthy === true, 'b discovered after reload', 5000);
  assert.ok((await ids()).includes('b/model-b'));

  // a slow stream on a, then a is removed: the stream finishes, a leaves routing
  a.setKnobs({ tokensPerSecond: 20, chunkCount: 10 });
  const streaming = fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'a/model-a', stream: true, messages: [{ role: 'user', content: 'x' }] }),
  }).then((r) => r.text());
  await waitFor(() => a.inflight === 1, 'stream started on a');
  saveByRename(path, configText(dir, [{ name: 'b', url: b.url }]));
  await waitFor(() => gateway.registry.get('a') === undefined, 'a removed', 5000);
  assert.ok(!(await ids()).some((id) => id.startsWith('a/')));
  const body = await streaming;
  assert.ok(body.trimEnd().endsWith('data: [DONE]'), 'the in-flight stream completed');
  const gone = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'a/model-a', messages: [{ role: 'user', content: 'x' }] }),
  });
  assert.equal(gone.status, 404);

  // an invalid edit: the previous config stays, /health shows the problem
  saveByRename(path, configText(dir, [{ name: 'b', url: `${b.url}/v1` }], 'park_timeout_s: soon'));
  await waitFor(() => gateway.reloadProblems.length > 0, 'reload rejected', 5000);
  const health = (await (await fetch(`${base}/health`)).json()) as {
    config: { reload_errors: { path: string; message: string }[] };
  };
  const paths = health.config.reload_errors.map((p) => p.path);
  assert.ok(paths.includes('backends[0].url'), paths.join(','));
  assert.ok(paths.includes('park_timeout_s'), paths.join(','));
  assert.ok((await ids()).includes('b/model-b'), 'still serving the previous config');

  // fixing it clears the error
  saveByRename(path, configText(dir, [{ name: 'b', url: b.url }], 'park_timeout_s: 5'));
  await waitFor(
    () => gateway.reloadProblems.length === 0 && gateway.config().park_timeout_s === 5,
    'valid reload',
    5000,
  );
});
