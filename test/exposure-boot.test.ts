/**
 * Boot: an open gateway (no api_key, no users) bound to a non-loopback address says so in the
 * log at error level; bound to loopback, or locked, it does not. Runs src/server.ts itself.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Starts the server on `host` port 0, waits until it listens, answers /health once, stops it. */
async function boot(host: string, config: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-exposure-'));
  try {
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      `store_dir: ${join(dir, 'store')}\njobs_dir: ${join(dir, 'jobs')}\nlog_level: info\nbackends: []\n${config}`,
    );
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/server.ts', '--config', file, '--port', '0', '--host', host],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    try {
      let port: string | undefined;
      for (let i = 0; i < 400 && !port; i++) {
        port = /Server listening at http:\/\/[^\s"]+:(\d+)/.exec(out)?.[1];
        if (!port) await new Promise((r) => setTimeout(r, 25));
      }
      if (!port) throw new Error(`did not start:\n${out}`);
      // one round trip: whatever boot logs right after listen has been written by now
      assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
      return out;
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('boot warning for an exposed open gateway', () => {
  test('open on 0.0.0.0: an error-level SECURITY line naming the fix', async () => {
    const out = await boot('0.0.0.0', '');
    const line = out.split('\n').find((l) => l.includes('SECURITY'));
    assert.ok(line, `warned:\n${out}`);
    const entry = JSON.parse(line) as { level: number; msg: string };
    assert.equal(entry.level, 50, 'error level: shown even with log_level: error');
    assert.match(entry.msg, /OPEN/);
    assert.match(entry.msg, /0\.0\.0\.0/);
    assert.match(entry.msg, /api_key/);
  });

  test('open on loopback, or locked on 0.0.0.0: no such line', async () => {
    assert.doesNotMatch(await boot('127.0.0.1', ''), /SECURITY/);
    assert.doesNotMatch(await boot('0.0.0.0', 'api_key: sk-boot-test-0123456789\n'), /SECURITY/);
  });
});
