/**
 * log_format: auto = pretty on a terminal, JSON lines otherwise; pretty/json force it. Keys
 * are redacted either way. createLogger is pure apart from its destination.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { createLogger, resolveLogFormat } from '../src/logging.ts';
import type { GatewayConfig } from '../src/config/types.ts';

/** Logs one line carrying secrets through a fresh logger and returns what reached the stream. */
async function render(log_format: GatewayConfig['log_format'], isTTY: boolean): Promise<string> {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => {
    text += c.toString('utf8');
  });
  const logger = createLogger({ log_level: 'info', log_format }, { isTTY, destination: out });
  logger.info(
    {
      req: { headers: { authorization: 'Bearer sk-secret-1', 'x-api-key': 'sk-secret-2', 'api-key': 'sk-secret-3' } },
      backend: { api_key: 'sk-secret-4' },
    },
    'hello there',
  );
  logger.debug('below the level');
  for (let i = 0; i < 50 && !text.includes('hello there'); i++) await new Promise((r) => setTimeout(r, 10));
  return text;
}

describe('log format', () => {
  test('resolveLogFormat', () => {
    assert.equal(resolveLogFormat('auto', true), 'pretty');
    assert.equal(resolveLogFormat('auto', false), 'json');
    assert.equal(resolveLogFormat('pretty', false), 'pretty');
    assert.equal(resolveLogFormat('json', true), 'json');
  });

  for (const [format, isTTY] of [
    ['auto', false],
    ['json', true],
  ] as const) {
    test(`${format} with isTTY=${isTTY}: one JSON object per line, keys redacted`, async () => {
      const text = await render(format, isTTY);
      const lines = text.trim().split('\n');
      assert.equal(lines.length, 1);
      const entry = JSON.parse(lines[0]) as {
        level: number;
        msg: string;
        req: { headers: Record<string, string> };
        backend: { api_key: string };
      };
      assert.equal(entry.msg, 'hello there');
      assert.equal(entry.level, 30);
      assert.equal(entry.req.headers.authorization, '[redacted]');
      assert.equal(entry.backend.api_key, '[redacted]');
      assert.doesNotMatch(text, /sk-secret/);
    });
  }

  for (const [format, isTTY] of [
    ['auto', true],
    ['pretty', false],
  ] as const) {
    test(`${format} with isTTY=${isTTY}: human-readable lines, keys redacted`, async () => {
      const text = await render(format, isTTY);
      const plain = text.replace(/\x1b\[[0-9;]*m/g, '');
      assert.match(plain, /INFO.*hello there/);
      assert.throws(() => JSON.parse(text.trim().split('\n')[0]), 'not JSON');
      assert.doesNotMatch(text, /sk-secret/);
      assert.doesNotMatch(text, /below the level/);
      // colours only for a terminal
      assert.equal(/\x1b\[/.test(text), isTTY);
    });
  }
});
