/**
 * Swap cost learnt over sockets (issue 19): a fake llama-swap box holds one model (it says so on
 * GET /running) and takes a known delay to load another. Calls through the real gateway with
 * the `openai` client, alternating models, each one after the first needing a load: the admin
 * /health shows each model's swap_s near the injected delay, and the loads stay out of the mean
 * service time; a load sent beside another call teaches none. The public /health says nothing of it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import OpenAI from 'openai';
import { startFake } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const MASTER = 'swap-cost-master-key-0123456789';
/** The fake's swap delay. */
const LOAD_MS = 600;

interface Learnt {
  service_s: number | null;
  prefill_tok_s: number | null;
  speed_samples: number;
  swap_s: Record<string, number>;
  residency: { models: { model: string }[] };
}

async function learnt(gw: TestGateway): Promise<Learnt> {
  const res = await fetch(`${gw.url}/health`, { headers: { authorization: `Bearer ${MASTER}` } });
  const health = (await res.json()) as { backends: Record<string, Learnt> };
  return health.backends.ls!;
}

/** The figures once `n` calls are learnt (an attempt settles just after its body ends). */
async function afterCalls(gw: TestGateway, n: number): Promise<Learnt> {
  for (let i = 0; i < 200; i++) {
    const f = await learnt(gw);
    if (f.speed_samples >= n) return f;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail(`the box never learnt ${n} calls`);
}

test("swap cost per model is learnt from calls that needed a load, near the box's real delay", async (t) => {
  const ls = await startFake('llamaswap', { models: ['small', 'big'], knobs: { loadingMs: LOAD_MS, chunkCount: 8 } });
  // no probe runs during the test: residency moves with the calls the gateway sends
  const gw = await startGateway([{ name: 'ls', url: ls.url }], { api_key: MASTER, health_check_interval: 3600 });
  t.after(async () => {
    await gw.close();
    await ls.close();
  });
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0, timeout: 10_000 });
  const messages = [{ role: 'user' as const, content: 'word '.repeat(30) }];

  assert.deepEqual(
    (await learnt(gw)).residency.models.map((m) => m.model),
    ['small'],
    '/running: small is loaded',
  );
  const plan: { model: string; stream: boolean }[] = [
    { model: 'small', stream: true }, // warm
    { model: 'big', stream: true },
    { model: 'small', stream: false },
    { model: 'big', stream: false },
    { model: 'small', stream: true },
    { model: 'big', stream: true },
  ];
  for (const [i, call] of plan.entries()) {
    if (call.stream) {
      const stream = await client.chat.completions.create({ model: call.model, messages, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      assert.ok(text.length > 0, `call ${i} streamed an answer`);
    } else {
      const answer = await client.chat.completions.create({ model: call.model, messages });
      assert.ok(answer.choices[0]?.message.content, `call ${i} answered`);
    }
    await afterCalls(gw, i + 1);
  }

  const f = await afterCalls(gw, plan.length);
  assert.deepEqual(Object.keys(f.swap_s).sort(), ['big', 'small']);
  const load = LOAD_MS / 1000;
  for (const [model, seconds] of Object.entries(f.swap_s)) {
    assert.ok(seconds > 0.6 * load && seconds < 1.4 * load, `${model}: swap ${seconds} s, the box takes ${load} s`);
  }
  // five of six calls waited for a load; learnt net of it, a call holds its slot far less than one
  assert.ok(f.service_s !== null && f.service_s < load / 2, `service ${f.service_s} s: loads kept out`);
  assert.ok(Math.abs(f.prefill_tok_s! - 4000) < 1e-6, `prefill ${f.prefill_tok_s}: the box's own timings`);

  const open = await (await fetch(`${gw.url}/health`)).text();
  assert.ok(!open.includes('swap_s') && !open.includes('"small"'), `the public summary names no model: ${open}`);
});

test('a load for a model the busy box does not hold waits for the box to drain, so it is a clean swap sample', async (t) => {
  // the busy-load exclusion itself (a load sent beside calls in flight teaches nothing) is a unit test in
  // scheduler-swap-cost.test.ts: warm-state routing no longer sends such a load, it parks until the box is idle
  const ls = await startFake('llamaswap', {
    models: ['small', 'big'],
    knobs: { loadingMs: LOAD_MS, chunkCount: 20, tokensPerSecond: 20 },
  });
  const gw = await startGateway([{ name: 'ls', url: ls.url, max_concurrent: 2 }], {
    api_key: MASTER,
    health_check_interval: 3600,
  });
  t.after(async () => {
    await gw.close();
    await ls.close();
  });
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0, timeout: 10_000 });
  const messages = [{ role: 'user' as const, content: 'hi' }];

  // a warm call holds one slot for about a second; the load is asked for beside it
  const first = await client.chat.completions.create({ model: 'small', messages, stream: true });
  const iterator = first[Symbol.asyncIterator]();
  await iterator.next(); // its first chunk: it is in flight on the box
  let warmEnded = false;
  const drained = (async () => {
    while (!(await iterator.next()).done) {
      /* the rest of the warm stream */
    }
    warmEnded = true;
  })();
  const load = await client.chat.completions.create({ model: 'big', messages });
  assert.ok(load.choices[0]?.message.content);
  assert.ok(warmEnded, 'the load was held until the warm call ended, not sent to the second slot');
  await drained;
  const f = await afterCalls(gw, 2);
  assert.ok(f.swap_s.big! > (0.6 * LOAD_MS) / 1000, `the lone load is learnt: ${JSON.stringify(f.swap_s)}`);
});
