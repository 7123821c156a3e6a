/**
 * Defects the HTTP fuzz (scripts/fuzz-http.ts) found, each pinned by the smallest request that
 * showed it.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';
import { rawRequest } from './helpers/raw-http.ts';

/** Uncaught exceptions raised while `run` goes on (and a little after), caught so they can be counted. */
async function uncaughtDuring(run: () => Promise<void>): Promise<Error[]> {
  const seen: Error[] = [];
  const onError = (err: Error) => seen.push(err);
  process.on('uncaughtException', onError);
  try {
    await run();
    await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    process.off('uncaughtException', onError);
  }
  return seen;
}

/** Writes `request` on a fresh socket and reads until the server closes it: the raw answer. */
function rawExchange(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.setTimeout(5_000, () => socket.destroy());
  });
}

describe('fuzz regressions', () => {
  test('a corrupt compressed body on a route refusing its content type: 415, no uncaught exception', async (t) => {
    const gw = await startGateway([]);
    t.after(() => gw.close());
    const answers: number[] = [];
    const uncaught = await uncaughtDuring(async () => {
      for (const encoding of ['gzip', 'deflate', 'br']) {
        const r = await rawRequest(
          gw.url,
          'POST',
          '/v1/chat/completions',
          { 'content-type': 'text/plain', 'content-encoding': encoding },
          'not compressed at all',
        );
        answers.push(r.status);
      }
    });
    assert.deepEqual(
      uncaught.map((e) => e.message),
      [],
      'no exception reaches the process',
    );
    assert.deepEqual(answers, [415, 415, 415]);
    const health = await fetch(`${gw.url}/health`);
    assert.equal(health.status, 200, 'the gateway still answers');
  });

  test('an audio file part without a filename is sent on (named `file`), not a 500', async (t) => {
    const vllm = await startFake('vllm');
    const gw = await startGateway([{ name: 'vllm', url: vllm.url }]);
    t.after(async () => {
      await gw.close();
      await vllm.close();
    });
    const b = 'fuzzboundary';
    const form =
      `--${b}\r\nContent-Disposition: form-data; name="model"\r\n\r\nacme/Qwen3-8B-Instruct\r\n` +
      `--${b}\r\nContent-Disposition: form-data; name="file"\r\nContent-Type: application/octet-stream\r\n\r\n` +
      `RIFF....WAVEfmt \r\n--${b}--\r\n`;
    for (const path of ['/v1/audio/transcriptions', '/v1/audio/translations']) {
      const r = await rawRequest(gw.url, 'POST', path, { 'content-type': `multipart/form-data; boundary=${b}` }, form);
      assert.equal(r.status, 200, `${path}: ${r.text}`);
      const sent = vllm.requests.filter((q) => q.path === path).at(-1);
      const file = (sent?.body as { file?: { filename: string; data: Buffer } } | undefined)?.file;
      assert.equal(file?.filename, 'file', `${path}: the file reached the backend under a name`);
      assert.equal(file?.data.toString(), 'RIFF....WAVEfmt ');
    }
  });

  test('a request the HTTP parser refuses: no content for HEAD, Anthropic shape for an anthropic-version caller', async (t) => {
    const gw = await startGateway([]);
    t.after(() => gw.close());
    const head = await rawExchange(gw.url, 'HEAD /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 400 /);
    assert.equal(head.slice(head.indexOf('\r\n\r\n') + 4), '', 'nothing after the head of an answer to HEAD');

    const big = `x-big: ${'a'.repeat(20_000)}\r\n`;
    const versioned = await rawExchange(
      gw.url,
      `GET /v1/models HTTP/1.1\r\nHost: x\r\nanthropic-version: 2023-06-01\r\n${big}\r\n`,
    );
    assert.match(versioned, /^HTTP\/1\.1 431 /);
    const body = JSON.parse(versioned.slice(versioned.indexOf('\r\n\r\n') + 4));
    assert.equal(body.type, 'error', 'Anthropic shape');
    assert.equal(body.error.type, 'invalid_request_error');

    const plain = await rawExchange(gw.url, `GET /v1/models HTTP/1.1\r\nHost: x\r\n${big}\r\n`);
    assert.equal(JSON.parse(plain.slice(plain.indexOf('\r\n\r\n') + 4)).error.code, 'request_headers_too_large');
  });

  test('a setting set to an integer past 2^53 (read exactly, as a BigInt): 400 naming it, not a 500', async (t) => {
    const gw = await startGateway([]);
    t.after(() => gw.close());
    for (const key of ['park_timeout_s', 'allowed_hosts', 'cors_origins']) {
      const r = await rawRequest(
        gw.url,
        'PUT',
        `/admin/api/settings/${key}`,
        { 'content-type': 'application/json' },
        '{"value":9007199254740994}',
      );
      assert.equal(r.status, 400, `${key}: ${r.text}`);
      const error = r.json<{ error: { code: string; param: string; message: string } }>().error;
      assert.equal(error.code, 'invalid_config');
      assert.equal(error.param, key);
      assert.match(error.message, /9007199254740994/);
    }
  });
});
