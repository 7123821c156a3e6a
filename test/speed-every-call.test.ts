/**
 * Speed is learnt from every completed call, over sockets (issue 19): non-stream answers and
 * short streams measure a box, and llama.cpp `timings` (on a non-stream body and on a stream's
 * last chunk) give its decode and prefill rates exactly. /health shows the figures.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { startFake, type FakeKind, type FakeKnobs } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

interface Figures {
  speed: number | null;
  decode_tok_s: number | null;
  prefill_tok_s: number | null;
  service_s: number | null;
  speed_samples: number;
  speed_by_model: Record<string, Omit<Figures, 'speed' | 'speed_by_model'>>;
}

async function figures(gw: TestGateway, backend: string): Promise<Figures> {
  const health = (await (await fetch(`${gw.url}/health`)).json()) as { backends: Record<string, Figures> };
  return health.backends[backend]!;
}

let calls = 0;

/** One call; each is a new conversation (its own first message), so conversation affinity keeps out of the way. */
async function chat(gw: TestGateway, model: string, stream: boolean): Promise<string> {
  const content = `${'word '.repeat(40)}${++calls}`;
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content }] }),
  });
  assert.equal(res.status, 200);
  await res.text(); // the whole answer: the attempt is settled when the body ends
  return res.headers.get('x-gateway-backend') ?? '';
}

/** The figures of `backend` once its `n`-th call is learnt (settle runs just after the body ends). */
async function learnt(gw: TestGateway, backend: string, n: number): Promise<Figures> {
  for (let i = 0; i < 100; i++) {
    const f = await figures(gw, backend);
    if (f.speed_samples >= n) return f;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail(`${backend} never learnt ${n} call(s)`);
}

async function oneBox(t: TestContext, kind: FakeKind, knobs: Partial<FakeKnobs>) {
  const box = await startFake(kind, { models: ['m'], knobs });
  const gw = await startGateway([{ name: 'box', url: box.url }]);
  t.after(async () => {
    await gw.close();
    await box.close();
  });
  return gw;
}

describe('speed from every completed call', () => {
  test('a box that only gets non-stream calls is measured: no "unmeasured first" over a faster box', async (t) => {
    const fast = await startFake('vllm', { models: ['m'], knobs: { chunkCount: 20, tokensPerSecond: 400 } });
    const slow = await startFake('vllm', { models: ['m'], knobs: { chunkCount: 20, tokensPerSecond: 40 } });
    // `fast` is first in candidate order, so it takes the first call while both are unmeasured
    const gw = await startGateway([
      { name: 'fast', url: fast.url },
      { name: 'slow', url: slow.url },
    ]);
    t.after(async () => {
      await gw.close();
      await fast.close();
      await slow.close();
    });

    assert.equal(await chat(gw, 'm', true), 'fast');
    await learnt(gw, 'fast', 1);
    assert.equal(await chat(gw, 'm', false), 'slow', 'never measured: tried once');
    const slowFigures = await learnt(gw, 'slow', 1);
    const slowSpeed = slowFigures.speed;
    assert.ok(slowSpeed !== null && slowSpeed < 60, `slow measured by a non-stream call: ${slowSpeed}`);
    assert.ok(slowFigures.service_s !== null && slowFigures.service_s >= 0.45, `service time ${slowFigures.service_s}`);
    assert.equal(slowFigures.prefill_tok_s, null, 'a non-stream answer without timings cannot tell prefill apart');
    for (let i = 3; i <= 5; i++) assert.equal(await chat(gw, 'm', false), 'fast', `call ${i} goes to the faster box`);
    const fastFigures = await learnt(gw, 'fast', 4);
    assert.ok(fastFigures.speed! > slowFigures.speed!, `${fastFigures.speed} > ${slowFigures.speed}`);
  });

  test('a 5-token stream counts', async (t) => {
    const gw = await oneBox(t, 'vllm', { chunkCount: 5, tokensPerSecond: 100 });
    assert.equal((await figures(gw, 'box')).speed, null);
    await chat(gw, 'm', true);
    const f = await learnt(gw, 'box', 1);
    assert.ok(f.decode_tok_s !== null && f.decode_tok_s > 20 && f.decode_tok_s < 150, `decode ${f.decode_tok_s} tok/s`);
    assert.equal(f.speed, f.decode_tok_s);
    assert.ok(f.prefill_tok_s !== null && f.prefill_tok_s > 0, 'prefill from the time to first token');
    assert.deepEqual(Object.keys(f.speed_by_model), ['m']);
  });

  // the fake's timings: prompt_ms = 0.25 ms per prompt token (4000 tok/s), predicted_ms = 1 ms
  // per token at tokensPerSecond 0 (1000 tok/s) — far from what the clock would say here
  for (const stream of [false, true]) {
    test(`llama.cpp timings give the rates (${stream ? 'last stream chunk' : 'non-stream body'})`, async (t) => {
      const gw = await oneBox(t, 'llamacpp', { chunkCount: 12 });
      await chat(gw, 'm', stream);
      const f = await learnt(gw, 'box', 1);
      assert.ok(Math.abs(f.prefill_tok_s! - 4000) < 1e-6, `prefill ${f.prefill_tok_s}`);
      assert.ok(Math.abs(f.decode_tok_s! - 1000) < 1e-6, `decode ${f.decode_tok_s}`);
      assert.ok(f.service_s !== null && f.service_s > 0 && f.service_s < 5, `service ${f.service_s}`);
      const { decode_tok_s, prefill_tok_s, service_s } = f;
      assert.deepEqual(f.speed_by_model.m, { decode_tok_s, prefill_tok_s, service_s, speed_samples: 1 });
    });
  }
});
