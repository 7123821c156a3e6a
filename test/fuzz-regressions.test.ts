/**
 * Defects the HTTP fuzz (scripts/fuzz-http.ts) found, each pinned by the smallest request that
 * showed it.
 */
import assert from 'node:assert/strict';
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

describe('fuzz regressions', () => {
  test('a corrupt compressed body on a route refusing its content type: 415, no uncaught exception', async (t) => {
    const gw = await startGateway([]);
    t.after(() => gw.close());
    const answers: number[] = [];
    const uncaught = await uncaughtDuring(async () => {
      for (const encoding of ['gzip', 'deflate', 'br']) {
        const r = await rawRequest(gw.url, 'POST', '/v1/chat/completions',
          { 'content-type': 'text/plain', 'content-encoding': encoding }, 'not compressed at all');
        answers.push(r.status);
      }
    });
    assert.deepEqual(uncaught.map((e) => e.message), [], 'no exception reaches the process');
    assert.deepEqual(answers, [415, 415, 415]);
    const health = await fetch(`${gw.url}/health`);
    assert.equal(health.status, 200, 'the gateway still answers');
  });

  test('an audio file part without a filename is sent on (named `file`), not a 500', async (t) => {
    const vllm = await startFake('vllm');
    const gw = await startGateway([{ name: 'vllm', url: vllm.url }]);
    t.after(async () => { await gw.close(); await vllm.close(); });
    const b = 'fuzzboundary';
    const form = `--${b}\r\nContent-Disposition: form-data; name="model"\r\n\r\nacme/Qwen3-8B-Instruct\r\n`
      + `--${b}\r\nContent-Disposition: form-data; name="file"\r\nContent-Type: application/octet-stream\r\n\r\n`
      + `RIFF....WAVEfmt \r\n--${b}--\r\n`;
    for (const path of ['/v1/audio/transcriptions', '/v1/audio/translations']) {
      const r = await rawRequest(gw.url, 'POST', path, { 'content-type': `multipart/form-data; boundary=${b}` }, form);
      assert.equal(r.status, 200, `${path}: ${r.text}`);
      const sent = vllm.requests.filter((q) => q.path === path).at(-1);
      const file = (sent?.body as { file?: { filename: string; data: Buffer } } | undefined)?.file;
      assert.equal(file?.filename, 'file', `${path}: the file reached the backend under a name`);
      assert.equal(file?.data.toString(), 'RIFF....WAVEfmt ');
    }
  });
});
