/**
 * The start-up contract, on the production bundle that `npm start` runs: flags and env, an
 * invalid config stops the process with every problem by key path, SIGTERM drains and exits 0.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startFake } from './fakes/index.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const SERVER = join(ROOT, 'dist/server.mjs');

function run(args: string[], env: NodeJS.ProcessEnv = {}, cwd = ROOT) {
  const merged = Object.fromEntries(Object.entries({ ...process.env, ...env }).filter(([, v]) => v !== undefined));
  const child = spawn(process.execPath, [SERVER, ...args], { cwd, env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    out += c.toString();
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const listening = async (): Promise<string> => {
    for (let i = 0; i < 600; i++) {
      // 15 s: a loaded 2-core machine starts slowly
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) return m[1];
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`did not start:\n${out}`);
  };
  return { child, exited, listening, output: () => out };
}

describe('server start-up (dist bundle)', () => {
  before(() => {
    const built = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
  });

  test('--help and --version print and exit 0; an unknown flag is one line and exit 2', () => {
    const cli = (...args: string[]) => spawnSync(process.execPath, [SERVER, ...args], { cwd: ROOT, encoding: 'utf8' });
    const help = cli('--help');
    assert.equal(help.status, 0, help.stderr);
    for (const flag of ['--config <file>', '--port <n>', '--host <addr>', '--version'])
      assert.ok(help.stdout.includes(flag), flag);
    const version = cli('--version');
    assert.equal(version.status, 0, version.stderr);
    assert.match(version.stdout, /^llm-gateway \d+\.\d+\.\d+\n$/);
    const wrong = cli('--bogus');
    assert.equal(wrong.status, 2);
    assert.equal(wrong.stdout, '');
    assert.equal(wrong.stderr, "llm-gateway: Unknown option '--bogus' (see --help)\n");
  });

  test('no config file: the sentence once, then where the console and the API are', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'llmgw-boot-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const p = run(['--port', '0'], { LLM_GATEWAY_CONFIG: undefined, PORT: undefined }, dir);
    const base = await p.listening();
    for (let i = 0; i < 100 && !p.output().includes('/ui'); i++) await new Promise((r) => setTimeout(r, 20));
    p.child.kill('SIGTERM');
    await p.exited;
    const out = p.output();
    assert.equal(out.match(/no config file at/g)?.length, 1, out);
    assert.equal(out.match(/built-in defaults/g)?.length, 1, out);
    assert.ok(out.includes(`console ${base}/ui · API ${base}/v1`), out);
  });

  test('an invalid config stops the process, listing every problem by key path', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'llmgw-boot-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      'park_timeout_s: soon\nbackends:\n  - name: a\n    url: http://127.0.0.1:1/v1\n  - name: a\n    url: http://127.0.0.1:2\nnonsense: 1\n',
    );
    const p = run(['--config', file, '--port', '0']);
    assert.notEqual(await p.exited, 0);
    for (const path of ['park_timeout_s', 'backends[0].url', 'backends[1].name', 'nonsense']) {
      assert.ok(p.output().includes(path), `${path} named in:\n${p.output()}`);
    }
  });

  test('env config/port/host, serving, the call log written by shutdown, SIGTERM drains and exits 0', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'llmgw-boot-'));
    const fake = await startFake('ollama', { models: ['m'], knobs: { tokensPerSecond: 50, chunkCount: 15 } });
    t.after(async () => {
      await fake.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      `store_dir: ${join(dir, 'store')}\njobs_dir: ${join(dir, 'jobs')}\nlog_level: info\nbackends:\n  - name: o\n    url: ${fake.url}\n`,
    );
    const p = run([], { LLM_GATEWAY_CONFIG: file, PORT: '0', HOST: '127.0.0.1' });
    const base = await p.listening();
    for (let i = 0; i < 100 && !(await fetch(`${base}/v1/models`).then((r) => r.text())).includes('o/m'); i++)
      await new Promise((r) => setTimeout(r, 20));
    // a stream in flight when SIGTERM arrives still completes
    const streaming = fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'o/m', stream: true, messages: [{ role: 'user', content: 'x' }] }),
    }).then((r) => r.text());
    for (let i = 0; i < 100 && fake.inflight === 0; i++) await new Promise((r) => setTimeout(r, 10));
    p.child.kill('SIGTERM');
    const text = await streaming;
    assert.ok(text.trimEnd().endsWith('data: [DONE]'), 'the in-flight stream finished');
    assert.equal(await p.exited, 0, p.output());
    assert.match(p.output(), /stopped cleanly/);
    // the call reached stats.db (written by a timer flush or by close() at shutdown)
    const again = run([], { LLM_GATEWAY_CONFIG: file, PORT: '0' });
    const url = await again.listening();
    const stats = (await (await fetch(`${url}/admin/api/stats?group=backend`)).json()) as {
      data: { key: string; calls: number }[];
    };
    again.child.kill('SIGTERM');
    await again.exited;
    assert.equal(stats.data.find((r) => r.key === 'o')?.calls, 1);
  });
});
