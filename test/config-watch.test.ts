import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ConfigResult } from '../src/config/load.ts';
import { watchConfigFile } from '../src/config/watch.ts';

const DEBOUNCE_MS = 100;

/** A temp dir with config.yaml, a started watcher, and a way to await reloads. */
async function setUp(t: TestContext, initial = 'log_level: info\n') {
  const dir = mkdtempSync(join(tmpdir(), 'llm-gateway-watch-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, initial);
  const reloads: ConfigResult[] = [];
  let wake: (() => void) | undefined;
  const watcher = watchConfigFile(
    file,
    (result) => {
      reloads.push(result);
      wake?.();
    },
    { debounceMs: DEBOUNCE_MS, env: { LEVEL_FROM_ENV: 'trace' } },
  );
  t.after(async () => {
    await watcher.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await watcher.ready;

  /** Waits until `count` reloads have been seen (fails after `timeoutMs`). */
  async function reloadsReach(count: number, timeoutMs = 3000): Promise<ConfigResult[]> {
    const deadline = Date.now() + timeoutMs;
    while (reloads.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) assert.fail(`expected ${count} reload(s), saw ${reloads.length}`);
      await new Promise<void>((res) => {
        wake = res;
        setTimeout(res, left).unref();
      });
    }
    return reloads;
  }
  /** Quiet time long enough for a (wrongly) pending extra reload to fire. */
  const settle = () => sleep(DEBOUNCE_MS * 4);

  /** Saves like vim/IDEs do: write a temp file, rename it over the original. */
  const saveByRename = (text: string) => {
    writeFileSync(`${file}.tmp`, text);
    renameSync(`${file}.tmp`, file);
  };
  return { dir, file, reloads, reloadsReach, settle, saveByRename };
}

function levelOf(result: ConfigResult | undefined): string | undefined {
  assert.ok(result?.ok, `expected a valid reload, got ${JSON.stringify(result)}`);
  return result.config.log_level;
}

test('a plain write triggers a reload with the new content', async (t) => {
  const w = await setUp(t);
  writeFileSync(w.file, 'log_level: debug\n');
  const [first] = await w.reloadsReach(1);
  assert.equal(levelOf(first), 'debug');
});

test('two rename-and-replace saves in a row are both seen', async (t) => {
  const w = await setUp(t);
  w.saveByRename('log_level: warn\n');
  await w.reloadsReach(1);
  assert.equal(levelOf(w.reloads[0]), 'warn');
  w.saveByRename('log_level: ${LEVEL_FROM_ENV}\n');
  await w.reloadsReach(2);
  assert.equal(levelOf(w.reloads[1]), 'trace', 'the watch survived the first rename (and interpolates with opts.env)');
  await w.settle();
  assert.equal(w.reloads.length, 2);
});

test('a burst of 10 quick writes gives exactly one reload, with the last content', async (t) => {
  const w = await setUp(t);
  const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'fatal', 'error', 'warn', 'debug'];
  for (const level of levels) writeFileSync(w.file, `log_level: ${level}\n`);
  await w.reloadsReach(1);
  await w.settle();
  assert.equal(w.reloads.length, 1, 'one reload for the whole burst');
  assert.equal(levelOf(w.reloads[0]), 'debug');
});

test('invalid content is delivered as ok:false with its problems', async (t) => {
  const w = await setUp(t);
  writeFileSync(w.file, 'log_level: loud\nbackends:\n  - name: a\n    url: http://h:1/v1\n');
  const [result] = await w.reloadsReach(1);
  assert.equal(result.ok, false);
  assert.deepEqual(result.ok ? [] : result.problems.map((p) => p.path).sort(), ['backends[0].url', 'log_level']);
});

test('deleting the file is ignored until it reappears; other files in the directory are ignored', async (t) => {
  const w = await setUp(t);
  unlinkSync(w.file);
  writeFileSync(join(w.dir, 'other.yaml'), 'log_level: nonsense\n');
  await w.settle();
  assert.equal(w.reloads.length, 0, 'no reload for a deletion or for a neighbour file');
  writeFileSync(w.file, 'log_level: error\n');
  const [result] = await w.reloadsReach(1);
  assert.equal(levelOf(result), 'error');
});

test('close() stops reloads, including a pending one', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'llm-gateway-watch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, 'log_level: info\n');
  let reloads = 0;
  const watcher = watchConfigFile(file, () => reloads++, { debounceMs: DEBOUNCE_MS });
  await watcher.ready;
  writeFileSync(file, 'log_level: debug\n');
  await sleep(20); // the change event is in, the debounced reload not yet
  await watcher.close();
  writeFileSync(file, 'log_level: warn\n');
  await sleep(DEBOUNCE_MS * 4);
  assert.equal(reloads, 0);
});
