/**
 * Failures classified honestly: 5xx/429 fail over and the last answer passes through, the
 * client's 4xx passes at once, a refused gateway credential is a 502 naming the backend, a
 * 200 that is not JSON is a failure, a threshold of failures probes instead of marking down,
 * and a call whose other candidates are busy parks instead of failing.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { startFake, type FakeBackend, type FakeKind, type StartFakeOptions } from './fakes/index.ts';
import { backendSpec, startGateway, type BackendInput, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const post = (url: string, body: unknown) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const ask = (model: string, stream = false) => ({ model, stream, messages: [{ role: 'user', content: 'hi' }] });
const chats = (f: FakeBackend) => f.requests.filter((r) => r.path.endsWith('/chat/completions')).length;
/** Makes `first` the scheduler's first choice (neither is measured: list order decides). */
function assertFirst(gw: TestGateway, first: string, other: string): void {
  const order = gw.gateway.scheduler.order([
    { backend: first, model: 'm' },
    { backend: other, model: 'm' },
  ]);
  assert.equal(order[0].backend, first);
}

/** One side of `twoBackends`: a fake serving model `m`, and its backend's config. */
interface Side {
  name: string;
  kind: FakeKind;
  fake?: StartFakeOptions;
  spec?: Partial<BackendInput>;
}

/** Two fakes behind one gateway, `first` the scheduler's first choice; all closed after the test. */
async function twoBackends(t: TestContext, first: Side, second: Side) {
  const a = await startFake(first.kind, { models: ['m'], ...first.fake });
  const b = await startFake(second.kind, { models: ['m'], ...second.fake });
  const gw = await startGateway([
    { name: first.name, url: a.url, ...first.spec },
    { name: second.name, url: b.url, ...second.spec },
  ]);
  t.after(async () => {
    await gw.close();
    await a.close();
    await b.close();
  });
  assertFirst(gw, first.name, second.name);
  return { gw, a, b };
}

describe('failover on upstream statuses', () => {
  test('a 500 fails over to the next candidate; alone, the 500 passes through as it was', async (t) => {
    const { gw } = await twoBackends(
      t,
      {
        name: 'bad',
        kind: 'vllm',
        fake: { knobs: { errorStatus: 500, errorBody: { error: { message: 'CUDA error', type: 'server_error' } } } },
      },
      { name: 'good', kind: 'llamacpp' },
    );
    const res = await post(gw.url, ask('m'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'good');
    const alone = await post(gw.url, ask('bad/m'));
    assert.equal(alone.status, 500);
    assert.deepEqual(await alone.json(), { error: { message: 'CUDA error', type: 'server_error' } });
  });

  test("429 everywhere: the last candidate's 429 reaches the client with its retry-after", async (t) => {
    const { gw, a, b } = await twoBackends(
      t,
      { name: 'a', kind: 'openrouter', fake: { knobs: { errorStatus: 429, retryAfter: '7' } } },
      { name: 'b', kind: 'together', fake: { knobs: { errorStatus: 429, retryAfter: '9' } } },
    );
    const res = await post(gw.url, ask('m'));
    assert.equal(res.status, 429);
    assert.equal(chats(a), 1);
    assert.equal(chats(b), 1);
    assert.equal(res.headers.get('x-gateway-backend'), 'b');
    assert.equal(res.headers.get('retry-after'), '9');
    assert.equal(
      gw.gateway.registry.get('a')!.consecutiveFailures + gw.gateway.registry.get('b')!.consecutiveFailures,
      0,
      '429 is not a failure',
    );
  });

  test("the client's own 400 passes through at once and never fails over", async (t) => {
    const { gw, b } = await twoBackends(
      t,
      {
        name: 'a',
        kind: 'vllm',
        fake: {
          knobs: {
            errorStatus: 400,
            errorBody: { object: 'error', message: 'max_tokens is too large', type: 'BadRequestError', code: 400 },
          },
        },
      },
      { name: 'b', kind: 'llamacpp' },
    );
    const res = await post(gw.url, ask('m'));
    assert.equal(res.status, 400);
    assert.equal(chats(b), 0);
    assert.equal(gw.gateway.registry.get('a')!.healthy, true);
  });

  test("an upstream 401 (the gateway's key for it is wrong) fails over; alone it is a 502 naming the backend; /health says auth", async (t) => {
    // llama.cpp with --api-key: /v1/models is public, so discovery sees it up; chat needs the key
    const { gw } = await twoBackends(
      t,
      { name: 'locked', kind: 'llamacpp', fake: { apiKey: 'sk-right-key' }, spec: { api_key: 'sk-wrong-key' } },
      { name: 'good', kind: 'vllm' },
    );
    assert.equal(gw.gateway.registry.get('locked')!.healthy, true);
    const res = await post(gw.url, ask('m'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'good');
    const health = (await (await fetch(`${gw.url}/health`)).json()) as any;
    assert.equal(health.backends.locked.error.kind, 'auth');

    gw.gateway.registry.discovered('locked', [{ id: 'm' }]);
    const alone = await post(gw.url, ask('locked/m'));
    assert.equal(alone.status, 502);
    const err = ((await alone.json()) as any).error;
    assert.equal(err.code, 'upstream_auth_failed');
    assert.match(err.message, /`locked`/);
  });

  test('a 200 whose body is not JSON is a failure: fail over, alone a 502', async (t) => {
    const { gw } = await twoBackends(
      t,
      { name: 'garbage', kind: 'vllm', fake: { knobs: { garbageJson: true } } },
      { name: 'good', kind: 'llamacpp' },
    );
    const res = await post(gw.url, ask('m'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'good');
    assert.ok(((await res.json()) as any).choices);
    const alone = await post(gw.url, ask('garbage/m'));
    assert.equal(alone.status, 502);
    assert.equal(((await alone.json()) as any).error.code, 'upstream_bad_response');
  });
});

describe('failure threshold and parking on failover', () => {
  test('500 × 3 then healthy: the threshold probes, the probe succeeds, the backend stays up and answers', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'], knobs: { errorStatus: 500, errorCount: 3 } });
    const gw = await startGateway([{ name: 'box', url: box.url }], { failure_threshold: 3 });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const probes = () => box.requests.filter((r) => r.path === '/v1/models').length;
    const before = probes();
    for (let i = 0; i < 3; i++) assert.equal((await post(gw.url, ask('m'))).status, 500);
    await waitFor(() => probes() > before, 'threshold triggered a probe');
    await waitFor(() => gw.gateway.registry.get('box')!.consecutiveFailures === 0, 'probe answered');
    assert.equal(gw.gateway.registry.get('box')!.healthy, true);
    assert.equal((await post(gw.url, ask('m'))).status, 200);
  });

  test('a dead box goes down at once (its connection refusal probes right away)', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'] });
    const gw = await startGateway([{ name: 'box', url: box.url }], { failure_threshold: 3 });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    box.setKnobs({ refuse: true });
    assert.equal((await post(gw.url, ask('m'))).status, 502);
    await waitFor(() => !gw.gateway.registry.get('box')!.healthy, 'marked down after one refusal and a failed probe');
  });

  test('the first candidate fails and the other is busy: the call parks for its time left instead of a 503', async (t) => {
    const bad = await startFake('vllm', { models: ['m'], knobs: { errorStatus: 503 } });
    const busy = await startFake('llamacpp', { models: ['m'], knobs: { latencyMs: 400 } });
    const gw = await startGateway(
      [
        { name: 'bad', url: bad.url },
        { name: 'busy', url: busy.url, max_concurrent: 1 },
      ],
      { park_timeout_s: 5 },
    );
    t.after(async () => {
      await gw.close();
      await bad.close();
      await busy.close();
    });
    const hog = post(gw.url, ask('busy/m'));
    await waitFor(() => busy.inflight === 1, 'busy is busy');
    const res = await post(gw.url, ask('m'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'busy');
    assert.equal(chats(bad), 1);
    assert.equal((await hog).status, 200);
  });

  test('a call parked again after a failover still re-resolves: a backend that joins serves it at once', async (t) => {
    const bad = await startFake('vllm', { models: ['m'], knobs: { errorStatus: 500 } });
    const busy = await startFake('llamacpp', { models: ['m'], knobs: { latencyMs: 3000 } });
    const joiner = await startFake('ollama', { models: ['m'] });
    const gw = await startGateway(
      [
        { name: 'bad', url: bad.url },
        { name: 'busy', url: busy.url, max_concurrent: 1 },
      ],
      { park_timeout_s: 10 },
    );
    t.after(async () => {
      await gw.close();
      await bad.close();
      await busy.close();
      await joiner.close();
    });
    const hog = post(gw.url, ask('busy/m'));
    await waitFor(() => busy.inflight === 1, 'busy is busy');
    const call = post(gw.url, ask('m'));
    await waitFor(
      () => chats(bad) === 1 && gw.gateway.scheduler.snapshot().parked.length === 1,
      'failed over and parked',
    );
    const started = Date.now();
    const cfg = gw.gateway.config();
    gw.gateway.reload({ ...cfg, backends: [...cfg.backends, backendSpec({ name: 'joiner', url: joiner.url })] });
    const res = await call;
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'joiner');
    assert.ok(Date.now() - started < 2000, 'served by the new backend, not after the hog');
    await hog;
  });

  test('two failovers in a row, the second after parking, end with the last answer (no crash)', async (t) => {
    const a = await startFake('vllm', { models: ['m'], knobs: { errorStatus: 500 } });
    const b = await startFake('llamacpp', { models: ['m'], knobs: { latencyMs: 300 } });
    const gw = await startGateway(
      [
        { name: 'a', url: a.url },
        { name: 'b', url: b.url, max_concurrent: 1 },
      ],
      { park_timeout_s: 5 },
    );
    t.after(async () => {
      await gw.close();
      await a.close();
      await b.close();
    });
    const hog = post(gw.url, ask('b/m'));
    await waitFor(() => b.inflight === 1, 'b is busy');
    b.setKnobs({ errorStatus: 503, errorBody: { error: { message: 'overloaded', type: 'server_error' } } });
    const res = await post(gw.url, ask('m'));
    await hog;
    assert.equal(res.status, 503);
    assert.deepEqual(await res.json(), { error: { message: 'overloaded', type: 'server_error' } });
    assert.equal(res.headers.get('x-gateway-backend'), 'b');
  });
});
