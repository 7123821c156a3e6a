/**
 * Residency (issue 19): which models each box holds loaded. The tracker's rules on their own
 * (calls move it, `resident` caps it, old news turns unknown), the readers against the captured
 * and documented bodies, then over sockets: llama-swap `/running`, Ollama `/api/ps`, LM Studio
 * `/api/v0/models`, vLLM and llama.cpp, boxes that cannot tell, and /health showing it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { listenFake } from './fakes/listen.ts';
import { startFake } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { readFixtureJson } from './helpers/fixtures.ts';
import { ResidencyTracker, type ResidencyReading } from '../src/backends/residency.ts';
import { parseLlamaSwapRunning, parseLmStudioModels, parseOllamaPs } from '../src/backends/residency-read.ts';
import { validateConfig } from '../src/config/schema.ts';

const swap = (loaded: string[]): ResidencyReading => ({ kind: 'llama-swap', mode: 'swap', loaded });

function tracker(resident?: number, ttlMs = 60_000) {
  return new ResidencyTracker({ residentOf: () => resident, ttlMs: () => ttlMs });
}

const names = (t: ResidencyTracker, backend: string, at: number) => t.view(backend, at)!.models.map((m) => m.model);

describe('residency tracker', () => {
  test('a call for another model makes it resident and, with resident 1, evicts the previous one', () => {
    const t = tracker();
    t.observeProbe('b', swap(['a']), 1000);
    assert.equal(t.isResident('b', 'a', 1000), true);
    t.observeCall('b', 'c', 2000);
    assert.equal(t.isResident('b', 'c', 2000), true);
    assert.equal(t.isResident('b', 'a', 2000), false);
    assert.deepEqual(t.view('b', 2000)!.models, [{ model: 'c', source: 'call', since: 2000 }]);
  });

  test('resident 2 keeps two, and a third evicts the least recently used', () => {
    const t = tracker(2);
    t.observeProbe('b', swap(['a']), 1000);
    t.observeCall('b', 'c', 2000);
    assert.deepEqual(names(t, 'b', 2000), ['c', 'a']);
    t.observeCall('b', 'a', 3000); // a used again: c is now the oldest
    t.observeCall('b', 'd', 4000);
    assert.deepEqual(names(t, 'b', 4000), ['d', 'a']);
  });

  test('a probe is the truth, except for calls sent after it left', () => {
    const t = tracker();
    t.observeProbe('b', swap(['a']), 1000);
    t.observeCall('b', 'c', 2000);
    t.observeProbe('b', swap(['c']), 3000);
    const confirmed = t.view('b', 3000)!.models;
    assert.deepEqual(confirmed, [{ model: 'c', source: 'probe', since: 2000 }], 'since kept, source now probe');
    t.observeCall('b', 'd', 5000);
    t.observeProbe('b', swap(['c']), 4000); // sent before the call for d: the box had not seen it
    assert.deepEqual(names(t, 'b', 5000), ['d']);
  });

  test('once the last good read is older than the TTL, residency is unknown, not stale-true', () => {
    const t = tracker(undefined, 10_000);
    t.observeProbe('b', swap(['a']), 1000);
    t.observeCall('b', 'a', 5000);
    assert.equal(t.isResident('b', 'a', 11_000), true);
    assert.equal(t.isResident('b', 'a', 11_001), undefined);
    assert.equal(t.view('b', 11_001)!.known, false);
    assert.deepEqual(t.view('b', 11_001)!.models, []);
  });

  test('the most models seen loaded at once raises the capacity; all-listed boxes ignore calls', () => {
    const t = tracker();
    t.observeProbe('o', { kind: 'ollama', mode: 'swap', loaded: ['a', 'c'] }, 1000);
    assert.equal(t.capacity('o'), 2);
    t.observeCall('o', 'd', 2000);
    assert.deepEqual(names(t, 'o', 2000), ['d', 'c'], 'a and c were read together: the first listed goes first');
    t.observeProbe('v', { kind: 'vllm', mode: 'all-listed', loaded: ['m'] }, 1000);
    t.observeCall('v', 'other', 2000);
    assert.deepEqual(names(t, 'v', 2000), ['m']);
    t.observeProbe('u', { kind: 'unknown', mode: 'unknown', loaded: [] }, 1000);
    t.observeCall('u', 'm', 2000);
    assert.equal(t.isResident('u', 'm', 2000), undefined);
  });
});

test('config: resident is an integer ≥ 1, on openai backends only', () => {
  const problems = (backend: Record<string, unknown>) => {
    const result = validateConfig({ backends: [{ name: 'b', url: 'http://127.0.0.1:1', ...backend }] });
    return result.ok ? [] : result.problems.map((p) => p.path);
  };
  assert.deepEqual(problems({ resident: 2 }), []);
  assert.deepEqual(problems({ resident: 0 }), ['backends[0].resident']);
  assert.deepEqual(problems({ resident: 1.5 }), ['backends[0].resident']);
  assert.deepEqual(problems({ type: 'comfyui', resident: 1 }), ['backends[0].resident']);
});

describe('residency readers against the real shapes', () => {
  test('llama-swap /running: ready and starting count, in both shapes', () => {
    const current = readFixtureJson('llm/llamaswap/running_ASSEMBLED_current_shape.json');
    assert.deepEqual(parseLlamaSwapRunning(current), ['m1']);
    const older = readFixtureJson('llm/llamaswap/running_older_shape.json');
    assert.deepEqual(parseLlamaSwapRunning(older), ['qwen3-30b-a3b']);
    const states = {
      running: [
        { model: 'x', state: 'stopping' },
        { model: 'y', state: 'starting' },
      ],
    };
    assert.deepEqual(parseLlamaSwapRunning(states), ['y']);
    assert.throws(() => parseLlamaSwapRunning({ models: [] }), /running/);
  });

  test('Ollama /api/ps: every listed model is loaded', () => {
    assert.deepEqual(parseOllamaPs(readFixtureJson('llm/ollama/api_ps_docs.json')), ['mistral:latest']);
    assert.deepEqual(parseOllamaPs(readFixtureJson('llm/ollama/api_ps.json')), ['qwen3:8b']);
    assert.throws(() => parseOllamaPs({ data: [] }), /models/);
  });

  test('LM Studio /api/v0/models: only state "loaded" counts; a list without states is not LM Studio', () => {
    assert.deepEqual(parseLmStudioModels(readFixtureJson('llm/lmstudio/api_v0_models_docs_shape.json')), ['qwen3-8b']);
    assert.throws(() => parseLmStudioModels({ object: 'list', data: [{ id: 'm', object: 'model' }] }), /state/);
  });
});

type HealthResidency = {
  kind: string;
  mode: string;
  known: boolean;
  capacity: number;
  read_at: string | null;
  models: { model: string; source: 'probe' | 'call'; since: string }[];
};

async function residencyOf(gw: TestGateway, backend: string): Promise<HealthResidency> {
  type Health = { backends: Record<string, { residency: HealthResidency }> };
  const health = (await (await fetch(`${gw.url}/health`)).json()) as Health;
  return health.backends[backend]!.residency;
}

async function chat(gw: TestGateway, model: string): Promise<void> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200, await res.text());
}

const QUIET = { health_check_interval: 3600 }; // no poll runs unless the test asks for one
const loaded = (r: HealthResidency) => r.models.map((m) => `${m.model}:${m.source}`);

describe('residency over sockets', () => {
  test('llama-swap: read from /running, moved by a call between probes, confirmed by the next probe', async (t) => {
    const ls = await startFake('llamaswap');
    const gw = await startGateway([{ name: 'ls', url: ls.url }], QUIET);
    t.after(async () => {
      await gw.close();
      await ls.close();
    });
    const [first, second] = ls.models as [string, string];
    let r = await residencyOf(gw, 'ls');
    assert.equal(r.kind, 'llama-swap');
    assert.equal(r.known, true);
    assert.equal(r.capacity, 1);
    assert.deepEqual(loaded(r), [`${first}:probe`]);
    assert.ok(
      ls.requests.some((q) => q.method === 'GET' && q.path === '/running'),
      'asked /running',
    );

    const probesBefore = ls.requests.filter((q) => q.path === '/running').length;
    await chat(gw, `ls/${second}`);
    r = await residencyOf(gw, 'ls');
    assert.deepEqual(loaded(r), [`${second}:call`], 'the call swapped it in; the previous model is out');
    assert.equal(ls.requests.filter((q) => q.path === '/running').length, probesBefore, 'no probe ran meanwhile');

    await gw.gateway.discovery.pollAll();
    r = await residencyOf(gw, 'ls');
    assert.deepEqual(loaded(r), [`${second}:probe`], 'the box confirms it');
  });

  test('resident: 2 keeps the previous model beside the new one', async (t) => {
    const ls = await startFake('llamaswap');
    const gw = await startGateway([{ name: 'ls', url: ls.url, resident: 2 }], QUIET);
    t.after(async () => {
      await gw.close();
      await ls.close();
    });
    const [first, second] = ls.models as [string, string];
    await chat(gw, `ls/${second}`);
    const r = await residencyOf(gw, 'ls');
    assert.equal(r.capacity, 2);
    assert.deepEqual(loaded(r), [`${second}:call`, `${first}:probe`]);
  });

  test('Ollama: read from /api/ps; the number it holds at once raises resident', async (t) => {
    const ol = await startFake('ollama');
    const gw = await startGateway([{ name: 'ol', url: ol.url }], QUIET);
    t.after(async () => {
      await gw.close();
      await ol.close();
    });
    const [first, second] = ol.models as [string, string];
    let r = await residencyOf(gw, 'ol');
    assert.equal(r.kind, 'ollama');
    assert.deepEqual(loaded(r), [`${first}:probe`]);
    await chat(gw, `ol/${second}`);
    assert.deepEqual(loaded(await residencyOf(gw, 'ol')), [`${second}:call`], 'resident 1 until the box shows more');
    await gw.gateway.discovery.pollAll(); // the fake Ollama keeps both loaded, as /api/ps then says
    r = await residencyOf(gw, 'ol');
    assert.equal(r.capacity, 2);
    assert.deepEqual(loaded(r).sort(), [`${first}:probe`, `${second}:probe`].sort());
    assert.equal(ol.requests.filter((q) => q.path === '/api/v0/models').length, 0, 'found on the first try');
  });

  test('vLLM and llama.cpp serve all they list; a paid API is unknown and never asked', async (t) => {
    const vl = await startFake('vllm');
    const lc = await startFake('llamacpp');
    const or = await startFake('openrouter');
    const gw = await startGateway(
      [
        { name: 'vl', url: vl.url },
        { name: 'lc', url: lc.url },
        { name: 'or', url: or.url, paid: true },
      ],
      QUIET,
    );
    t.after(async () => {
      await gw.close();
      await vl.close();
      await lc.close();
      await or.close();
    });
    const v = await residencyOf(gw, 'vl');
    assert.deepEqual([v.kind, v.mode, v.known], ['vllm', 'all-listed', true]);
    assert.deepEqual(
      loaded(v),
      vl.models.map((m) => `${m}:probe`),
    );
    const l = await residencyOf(gw, 'lc');
    assert.deepEqual([l.kind, l.mode, loaded(l)], ['llama.cpp', 'all-listed', [`${lc.models[0]}:probe`]]);
    const o = await residencyOf(gw, 'or');
    assert.deepEqual([o.kind, o.known, o.models], ['unknown', false, []]);
    assert.ok(
      or.requests.every((q) => q.path.endsWith('/v1/models')),
      'only its model list was asked for',
    );
    assert.equal(gw.gateway.residency.isResident('or', 'acme/chat-mini', Date.now()), undefined);
  });

  test('an unpaid box that says nothing of its kind is asked once, then left unknown', async (t) => {
    const tg = await startFake('together');
    const gw = await startGateway([{ name: 'tg', url: tg.url }], QUIET);
    t.after(async () => {
      await gw.close();
      await tg.close();
    });
    await gw.gateway.discovery.pollAll();
    const r = await residencyOf(gw, 'tg');
    assert.deepEqual([r.kind, r.known], ['unknown', false]);
    assert.equal(tg.requests.filter((q) => q.path === '/api/ps').length, 1);
    assert.equal(tg.requests.filter((q) => q.path === '/api/v0/models').length, 1);
  });

  test('LM Studio: read from /api/v0/models state', async (t) => {
    const body = readFixtureJson<{ data: { id: string }[] }>('llm/lmstudio/api_v0_models_docs_shape.json');
    const seen: string[] = [];
    const lm = await listenFake({
      label: 'lmstudio',
      refuse: () => false,
      crashed: (res) => {
        res.writeHead(500).end();
      },
      handle: async (req, res) => {
        seen.push(req.url ?? '');
        const send = (status: number, json: unknown) =>
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
        if (req.url === '/v1/models') {
          const data = body.data.map((m) => ({ id: m.id, object: 'model', owned_by: 'organization_owner' }));
          return void send(200, { object: 'list', data });
        }
        if (req.url === '/api/v0/models') return void send(200, body);
        send(404, { error: 'Unexpected endpoint or method.' });
      },
    });
    const gw = await startGateway([{ name: 'lm', url: `http://127.0.0.1:${lm.port}` }], QUIET);
    t.after(async () => {
      await gw.close();
      await lm.close();
    });
    const r = await residencyOf(gw, 'lm');
    assert.deepEqual([r.kind, r.mode, r.known], ['lmstudio', 'swap', true]);
    assert.deepEqual(loaded(r), ['qwen3-8b:probe']);
    assert.deepEqual(seen, ['/v1/models', '/api/ps', '/api/v0/models']);
  });

  test('a box whose probes fail keeps what it said only until the TTL (2 poll intervals), then unknown', async (t) => {
    const ls = await startFake('llamaswap');
    const gw = await startGateway([{ name: 'ls', url: ls.url }], QUIET);
    t.after(async () => {
      await gw.close();
      await ls.close();
    });
    ls.setKnobs({ refuse: true });
    await gw.gateway.discovery.pollAll();
    assert.equal(gw.gateway.registry.get('ls')!.healthy, false);
    const now = Date.now();
    const ttlMs = 2 * QUIET.health_check_interval * 1000;
    assert.equal(gw.gateway.residency.isResident('ls', ls.models[0]!, now), true, 'within the TTL');
    assert.equal(gw.gateway.residency.isResident('ls', ls.models[0]!, now + ttlMs), undefined, 'past it');
    assert.equal(gw.gateway.residency.view('ls', now + ttlMs)!.known, false);
  });
});
