/**
 * Defects the HTTP fuzz (scripts/fuzz-http.ts) found, each pinned by the smallest request that
 * showed it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
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
  test('a corrupt compressed body on a route that refuses its content type: a 415, no uncaught exception', async (t) => {
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
});
