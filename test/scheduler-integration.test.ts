/**
 * The scheduler over real sockets: parking in arrival order under caps, model affinity on
 * hand-off, parked calls picked up by a backend that comes back, stream faults that free the
 * slot, and the 503s of a full or patient-less queue.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const post = (url: string, body: object, signal?: AbortSignal) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
const ask = (model: string, text: string, stream = true) => ({
  model,
  stream,
  messages: [{ role: 'user', content: text }],
});
const chatRequests = (f: FakeBackend) => f.requests.filter((r) => r.path === '/v1/chat/completions');
const lastUserText = (body: any) => body.messages.at(-1).content as string;

describe('scheduler, end to end', () => {
  test('20 concurrent streams over two backends capped at 1: all complete, in arrival order, one at a time each', async (t) => {
    const a = await startFake('llamacpp', { models: ['m'], knobs: { tokensPerSecond: 400, chunkCount: 8 } });
    const b = await startFake('vllm', { models: ['m'], knobs: { tokensPerSecond: 400, chunkCount: 8 } });
    const gw = await startGateway([
      { name: 'a', url: a.url, max_concurrent: 1 },
      { name: 'b', url: b.url, max_concurrent: 1 },
    ]);
    t.after(async () => {
      await gw.close();
      await a.close();
      await b.close();
    });
    const calls: Promise<{ status: number; text: string }>[] = [];
    for (let i = 0; i < 20; i++) {
      calls.push(post(gw.url, ask('m', String(i))).then(async (r) => ({ status: r.status, text: await r.text() })));
      // the next call is sent only once this one reached the gateway (parked or forwarded), so
      // arrival order is the order of i, whatever the client's connections do
      await waitFor(
        () => gw.gateway.scheduler.snapshot().parked.length + chatRequests(a).length + chatRequests(b).length > i,
        `call ${i} arrived`,
      );
    }
    const results = await Promise.all(calls);
    for (const r of results) {
      assert.equal(r.status, 200);
      assert.ok(r.text.trimEnd().endsWith('data: [DONE]'), 'complete stream');
    }
    assert.equal(a.maxInflight, 1, 'never more than one in flight on a');
    assert.equal(b.maxInflight, 1, 'never more than one in flight on b');
    const served = [...chatRequests(a), ...chatRequests(b)].sort((x, y) => x.startedAt - y.startedAt);
    assert.equal(served.length, 20, 'nothing lost, nothing duplicated');
    const order = served.map((r) => Number(lastUserText(r.body)));
    assert.deepEqual(
      [...order].sort((x, y) => x - y),
      Array.from({ length: 20 }, (_, i) => i),
    );
    for (const f of [a, b]) {
      const mine = chatRequests(f).map((r) => Number(lastUserText(r.body)));
      assert.deepEqual(
        mine,
        [...mine].sort((x, y) => x - y),
        `FIFO on ${f.kind}: ${mine.join(',')}`,
      );
    }
    // across the two backends, arrival at the fakes may swap neighbours (one connection is a
    // hair faster than the other), but no call is served far out of its arrival order
    order.forEach((call, position) => assert.ok(Math.abs(call - position) <= 2, `grant order ${order.join(',')}`));
  });

  test('affinity: a freed backend takes the waiting call for the model it just ran, until the other is overdue', async (t) => {
    const swap = await startFake('llamaswap', {
      models: ['model-a', 'model-b'],
      knobs: { tokensPerSecond: 100, chunkCount: 10 },
    });
    const gw = await startGateway([{ name: 'swap', url: swap.url, max_concurrent: 1 }], { affinity_max_wait_s: 120 });
    t.after(async () => {
      await gw.close();
      await swap.close();
    });

    const run = async () => {
      const first = post(gw.url, ask('model-a', 'a1')).then((r) => r.text());
      await waitFor(() => swap.inflight === 1, 'a1 running');
      const olderB = post(gw.url, ask('model-b', 'b1')).then((r) => r.text());
      await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 1, 'b1 parked');
      const youngerA = post(gw.url, ask('model-a', 'a2')).then((r) => r.text());
      await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 2, 'a2 parked');
      await Promise.all([first, olderB, youngerA]);
      return chatRequests(swap)
        .slice(-3)
        .map((r) => lastUserText(r.body));
    };
    assert.deepEqual(await run(), ['a1', 'a2', 'b1'], 'same model first: no reload');

    gw.gateway.scheduler.configure({ affinityMaxWaitMs: 50 }); // b1 will be overdue when a1 ends
    assert.deepEqual(await run(), ['a1', 'b1', 'a2'], 'an overdue waiter goes first');
  });

  test('a backend that comes back while calls are parked gets them within one fast-probe interval', async (t) => {
    const busy = await startFake('llamacpp', { models: ['m'], knobs: { tokensPerSecond: 20, chunkCount: 40 } });
    const later = await startFake('vllm', { models: ['m'] });
    const port = later.port;
    const gw = await startGateway(
      [
        { name: 'busy', url: busy.url, max_concurrent: 1 },
        { name: 'later', url: later.url },
      ],
      { fast_probe_interval_s: 0.2, health_check_interval: 300 },
    );
    let revived: FakeBackend | undefined;
    t.after(async () => {
      await gw.close();
      await busy.close();
      await revived?.close();
    });
    await later.close(); // the box goes down: nothing listens there now
    await gw.gateway.discovery.pollAll();
    assert.equal(gw.gateway.registry.get('later')!.healthy, false);
    const long = post(gw.url, ask('m', 'long')).then((r) => r.text());
    await waitFor(() => busy.inflight === 1, 'busy occupied');
    const parked = post(gw.url, ask('m', 'parked', false));
    await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 1, 'call parked');
    const health = (await (await fetch(`${gw.url}/health`)).json()) as {
      parked: { total: number; by_alias: Record<string, number>; waiters: { age_s: number; remaining_s: number }[] };
    };
    assert.equal(health.parked.total, 1);
    assert.equal(health.parked.by_alias.m, 1);
    assert.ok(health.parked.waiters[0].remaining_s > 0);

    revived = await startFake('vllm', { models: ['m'], port });
    const since = Date.now();
    const res = await parked;
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'later');
    assert.ok(Date.now() - since < 1500, `picked up after ${Date.now() - since} ms`);
    assert.equal(busy.inflight, 1, 'while the busy backend was still busy');
    await long;
  });

  test('a backend killed mid-stream: error event, slot freed, the next call succeeds elsewhere', async (t) => {
    const doomed = await startFake('llamacpp', { models: ['m'], knobs: { tokensPerSecond: 50, chunkCount: 100 } });
    const spare = await startFake('ollama', { models: ['m'] });
    const gw = await startGateway([
      { name: 'doomed', url: doomed.url, max_concurrent: 1 },
      { name: 'spare', url: spare.url, paid: true },
    ]);
    t.after(async () => {
      await gw.close();
      await spare.close();
    });
    const res = await post(gw.url, ask('m', 'x'));
    assert.equal(res.headers.get('x-gateway-backend'), 'doomed', 'unpaid first');
    const reader = res.body!.getReader();
    await reader.read();
    await doomed.close();
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString('utf8');
    }
    assert.match(text, /"code":"stream_interrupted"/);
    assert.ok(!text.includes('[DONE]'));
    await waitFor(
      () => gw.gateway.scheduler.snapshot().backends.find((b) => b.name === 'doomed')!.inflight === 0,
      'slot freed',
    );
    const next = await post(gw.url, ask('m', 'y', false));
    assert.equal(next.status, 200);
    assert.equal(next.headers.get('x-gateway-backend'), 'spare');
  });

  test('a stalled stream is cut after the idle timeout, frees its slot and counts as a failure (the threshold probes; a good probe keeps it up)', async (t) => {
    const staller = await startFake('vllm', { models: ['m'], knobs: { stallAfterChunks: 2, chunkCount: 10 } });
    const gw = await startGateway([{ name: 's', url: staller.url, max_concurrent: 1 }], {
      stream_idle_timeout_s: 0.3,
      failure_threshold: 2,
    });
    t.after(async () => {
      await gw.close();
      await staller.close();
    });
    const started = Date.now();
    const text = await (await post(gw.url, ask('m', 'x'))).text();
    const took = Date.now() - started;
    assert.ok(took >= 250 && took < 2000, `cut after ${took} ms`);
    assert.match(text, /"code":"stream_interrupted"/);
    assert.match(text, /idle/);
    await waitFor(() => staller.inflight === 0, 'upstream aborted');
    assert.equal(gw.gateway.scheduler.snapshot().backends[0].inflight, 0);
    assert.equal(gw.gateway.registry.get('s')!.consecutiveFailures, 1);
    const probesBefore = staller.requests.filter((r) => r.path === '/v1/models').length;
    await (await post(gw.url, ask('m', 'again'))).text();
    await waitFor(
      () => staller.requests.filter((r) => r.path === '/v1/models').length > probesBefore,
      'two consecutive failures trigger a probe',
    );
    await waitFor(() => gw.gateway.registry.get('s')!.consecutiveFailures === 0, 'the probe answered');
    assert.equal(gw.gateway.registry.get('s')!.healthy, true, 'a backend whose probe succeeds stays up');
  });

  test('a long prefill before the first token is not a stall', async (t) => {
    const slowStart = await startFake('llamacpp', { models: ['m'], knobs: { prefillMs: 700, chunkCount: 5 } });
    const gw = await startGateway([{ name: 'p', url: slowStart.url }], { stream_idle_timeout_s: 0.3 });
    t.after(async () => {
      await gw.close();
      await slowStart.close();
    });
    const text = await (await post(gw.url, ask('m', 'x'))).text();
    assert.ok(text.trimEnd().endsWith('data: [DONE]'), text.slice(-200));
    assert.equal(gw.gateway.registry.get('p')!.consecutiveFailures, 0);
  });

  test('parking limits: park timeout, parking off per alias, queue full — each a 503 with Retry-After', async (t) => {
    const f = await startFake('llamacpp', { models: ['m'], knobs: { tokensPerSecond: 20, chunkCount: 40 } });
    const gw = await startGateway([{ name: 'f', url: f.url, max_concurrent: 1 }], {
      park_timeout_s: 0.3,
      max_parked: 2,
      alias_park: { impatient: 0 },
      virtual_models: { impatient: 'm' },
    });
    t.after(async () => {
      await gw.close();
      await f.close();
    });
    const ac = new AbortController();
    const occupying = post(gw.url, ask('m', 'occupy'), ac.signal)
      .then((r) => r.text())
      .catch(() => '');
    await waitFor(() => f.inflight === 1, 'occupied');

    const off = await post(gw.url, ask('impatient', 'x'));
    assert.equal(off.status, 503);
    assert.equal(off.headers.get('retry-after'), '1');
    assert.equal(((await off.json()) as { error: { code: string } }).error.code, 'parking_off');

    const timedOut = await post(gw.url, ask('m', 'x'));
    assert.equal(timedOut.status, 503);
    assert.equal(timedOut.headers.get('retry-after'), '2');
    assert.equal(((await timedOut.json()) as { error: { code: string } }).error.code, 'park_timeout');

    gw.gateway.scheduler.configure({ maxParked: 1 });
    const waiter = post(gw.url, ask('m', 'w'));
    await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 1, 'one parked');
    const full = await post(gw.url, ask('m', 'x'));
    assert.equal(full.status, 503);
    assert.equal(full.headers.get('retry-after'), '2');
    assert.equal(((await full.json()) as { error: { code: string } }).error.code, 'queue_full');
    await waiter;
    ac.abort();
    await occupying;
  });

  test('a client that disconnects while parked leaves the queue at once', async (t) => {
    const f = await startFake('llamacpp', { models: ['m'], knobs: { tokensPerSecond: 20, chunkCount: 40 } });
    const gw = await startGateway([{ name: 'f', url: f.url, max_concurrent: 1 }]);
    t.after(async () => {
      await gw.close();
      await f.close();
    });
    const occupying = post(gw.url, ask('m', 'occupy')).then((r) => r.text());
    await waitFor(() => f.inflight === 1, 'occupied');
    const ac = new AbortController();
    const parked = post(gw.url, ask('m', 'gone'), ac.signal).catch((e: Error) => e);
    await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 1, 'parked');
    ac.abort();
    await parked;
    await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 0, 'left the queue');
    await occupying;
    assert.ok(!chatRequests(f).some((r) => lastUserText(r.body) === 'gone'), 'never forwarded');
  });
});

describe('parked calls and a changing fleet', () => {
  test('a backend added by a config change while calls are parked takes them at once', async (t) => {
    const busy = await startFake('llamacpp', { models: ['m'], knobs: { tokensPerSecond: 20, chunkCount: 40 } });
    const added = await startFake('ollama', { models: ['m'] });
    const gw = await startGateway([{ name: 'busy', url: busy.url, max_concurrent: 1 }], { health_check_interval: 300 });
    t.after(async () => {
      await gw.close();
      await busy.close();
      await added.close();
    });
    const long = post(gw.url, ask('m', 'long')).then((r) => r.text());
    await waitFor(() => busy.inflight === 1, 'busy occupied');
    const parked = post(gw.url, ask('m', 'parked', false));
    await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 1, 'call parked');
    const { backendSpec } = await import('./helpers/gateway.ts');
    const cfg = gw.gateway.config();
    gw.gateway.reload({ ...cfg, backends: [...cfg.backends, backendSpec({ name: 'added', url: added.url })] });
    const res = await parked;
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'added');
    assert.equal(busy.inflight, 1, 'while the busy backend was still busy');
    await long;
  });
});
