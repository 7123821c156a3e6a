/**
 * One table, one row per backend kind (src/backends/kinds/): what each kind's descriptor says —
 * probe path, credential headers, defaults, the client APIs it speaks, its quirks — and that the
 * code reading it does what the scattered type checks did before (the probe asks that path with
 * those headers, the registry caps a ComfyUI box at 1, only Anthropic passes Messages through,
 * a paid LLM kind uses the built-in prices, llama.cpp's "Loading model" is not a broken box, …),
 * and that config validation accepts each kind's own options and refuses them on the others.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { Agent } from 'undici';
import { credentialHeaders } from '../src/backends/credentials.ts';
import { BACKEND_KINDS, descriptorFor, speaks, type ClientApi } from '../src/backends/kinds/index.ts';
import { usesBuiltInPrices } from '../src/backends/pricing.ts';
import { probeBackend } from '../src/backends/probe.ts';
import { BackendRegistry } from '../src/backends/registry.ts';
import { ResidencyReader } from '../src/backends/residency-read.ts';
import { BACKEND_DEFAULTS } from '../src/config/defaults.ts';
import { validateConfig } from '../src/config/schema.ts';
import type { BackendSpec, BackendType } from '../src/config/types.ts';
import { SURFACE_TYPES } from '../src/routing/resolve.ts';
import { classifyStatus } from '../src/upstream/classify.ts';

const KEY = 'sk-kinds-test-key';
const ALL_APIS: ClientApi[] = [
  'chat',
  'completions',
  'embeddings',
  'audio',
  'responses',
  'messages',
  'count_tokens',
  'ollama',
  'media',
];
const OPENAI_APIS: ClientApi[] = ['chat', 'completions', 'embeddings', 'audio'];
const BEARER = { authorization: `Bearer ${KEY}` };
const ANTHROPIC_OWN = { 'anthropic-version': '2023-06-01' };

interface Row {
  type: BackendType;
  probePath: string;
  /** The gateway's own request headers with `api_key: KEY`. */
  keyHeaders: Record<string, string>;
  /** Without a key but with `user:pw@` in the URL. */
  userinfoHeaders: Record<string, string>;
  /** The in-flight cap with a global max_concurrent of 4 and none of its own. */
  cap: number;
  residentDefault: number | undefined;
  native: ClientApi[];
  /** Routing surfaces (routing/resolve.ts) it is a candidate on. */
  surfaces: string[];
  isMedia: boolean;
  builtInPricesWhenPaid: boolean;
  groupSwitch: string | undefined;
  /** Options only some kinds accept: accepted here? */
  options: { auth_mode: boolean; resident: boolean; prompt_cache: boolean; pricing: boolean; poll_interval: boolean };
}

const BASIC = { authorization: `Basic ${Buffer.from('user:pw').toString('base64')}` };

const TABLE: Row[] = [
  {
    type: 'openai',
    probePath: '/v1/models',
    keyHeaders: BEARER,
    userinfoHeaders: BASIC,
    cap: 4,
    residentDefault: 1,
    native: OPENAI_APIS,
    surfaces: ['openai', 'messages'],
    isMedia: false,
    builtInPricesWhenPaid: true,
    groupSwitch: 'unload_llm',
    options: { auth_mode: false, resident: true, prompt_cache: true, pricing: true, poll_interval: false },
  },
  {
    type: 'ollama',
    probePath: '/v1/models',
    keyHeaders: BEARER,
    userinfoHeaders: BASIC,
    cap: 4,
    residentDefault: 1,
    native: [...OPENAI_APIS, 'ollama'],
    surfaces: ['openai', 'messages'],
    isMedia: false,
    builtInPricesWhenPaid: true,
    groupSwitch: undefined,
    options: { auth_mode: false, resident: true, prompt_cache: true, pricing: true, poll_interval: false },
  },
  {
    type: 'anthropic',
    probePath: '/v1/models?limit=1000',
    keyHeaders: { 'x-api-key': KEY, ...ANTHROPIC_OWN },
    userinfoHeaders: ANTHROPIC_OWN,
    cap: 4,
    residentDefault: undefined,
    native: ['messages', 'count_tokens'],
    surfaces: ['messages'],
    isMedia: false,
    builtInPricesWhenPaid: true,
    groupSwitch: undefined,
    options: { auth_mode: true, resident: false, prompt_cache: false, pricing: true, poll_interval: false },
  },
  {
    type: 'comfyui',
    probePath: '/system_stats',
    keyHeaders: BEARER,
    userinfoHeaders: BASIC,
    cap: 1,
    residentDefault: undefined,
    native: ['media'],
    surfaces: [],
    isMedia: true,
    builtInPricesWhenPaid: false,
    groupSwitch: 'free_media',
    options: { auth_mode: false, resident: false, prompt_cache: false, pricing: false, poll_interval: true },
  },
];

function spec(type: BackendType, extra: Partial<BackendSpec> = {}): BackendSpec {
  return { ...BACKEND_DEFAULTS, name: `b-${type}`, url: 'http://127.0.0.1:9', type, ...extra };
}

/** A server that records what it was asked and answers every GET like a backend would. */
async function recorder(t: { after(fn: () => Promise<void>): void }) {
  const seen: { path: string; headers: IncomingHttpHeaders }[] = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers });
    res.setHeader('content-type', 'application/json');
    if (req.url === '/api/ps') return void res.end(JSON.stringify({ models: [{ name: 'm1', model: 'm1' }] }));
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'm1', object: 'model', owned_by: 'someone' }] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const agent = new Agent();
  t.after(async () => {
    await agent.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, agent };
}

test('the table has one row per kind, and every kind of the config enum has a descriptor', () => {
  assert.deepEqual(
    BACKEND_KINDS.map((k) => k.type),
    TABLE.map((r) => r.type),
  );
  for (const r of TABLE) assert.equal(descriptorFor(r.type).type, r.type);
});

for (const row of TABLE) {
  describe(`backend kind ${row.type}`, () => {
    const kind = descriptorFor(row.type);

    test('probe: the one GET its kind names, with its credential', async (t) => {
      assert.equal(kind.probe.path, row.probePath);
      const box = await recorder(t);
      const models = await probeBackend(spec(row.type, { url: box.url, api_key: KEY }), box.agent, 5000);
      assert.equal(box.seen.length, 1);
      assert.equal(box.seen[0].path, row.probePath);
      for (const [name, value] of Object.entries(row.keyHeaders)) assert.equal(box.seen[0].headers[name], value);
      // a ComfyUI box's answer only says it is up; the others' is their model list
      assert.deepEqual(
        models.map((m) => m.id),
        row.isMedia ? [] : ['m1'],
      );
    });

    test('credentials: the key as the kind sends it, else the URL userinfo where the kind allows it', () => {
      assert.deepEqual(credentialHeaders(spec(row.type, { api_key: KEY })), row.keyHeaders);
      assert.deepEqual(credentialHeaders(spec(row.type, { url: 'http://user:pw@127.0.0.1:9' })), row.userinfoHeaders);
      assert.deepEqual(credentialHeaders(spec(row.type)), row.type === 'anthropic' ? ANTHROPIC_OWN : {});
    });

    test('defaults: the in-flight cap and resident count it gets when the spec sets none', () => {
      const registry = new BackendRegistry();
      registry.reconcile([spec(row.type), spec(row.type, { name: 'own', max_concurrent: 3 })], 4);
      assert.equal(registry.get(`b-${row.type}`)!.cap, row.cap);
      assert.equal(registry.get('own')!.cap, 3, 'its own max_concurrent wins');
      assert.equal(kind.defaults.resident, row.residentDefault);
    });

    test('surfaces: the client APIs it speaks natively, and the routing surfaces it is a candidate on', () => {
      assert.deepEqual(
        ALL_APIS.filter((api) => speaks(kind, api)),
        row.native,
      );
      const routes = Object.entries(SURFACE_TYPES).filter(([, types]) =>
        (types as readonly string[]).includes(row.type),
      );
      assert.deepEqual(
        routes.map(([surface]) => surface),
        row.surfaces,
      );
      // the Responses API is passed through only when the spec says so, and only by chat kinds
      assert.equal(speaks(kind, 'responses', { responses: 'native' }), row.native.includes('chat'));
      assert.equal(speaks(kind, 'responses', { responses: 'translate' }), false);
    });

    test('quirks: media-only, built-in prices when paid, GPU group switch', () => {
      assert.equal(kind.isMedia, row.isMedia);
      assert.equal(usesBuiltInPrices(spec(row.type, { paid: true })), row.builtInPricesWhenPaid);
      assert.equal(usesBuiltInPrices(spec(row.type)), false, 'an unpaid box is never priced from the table');
      assert.equal(kind.groupSwitch, row.groupSwitch);
    });

    test('config: the options only some kinds have are accepted on this one as the table says', () => {
      const values = { auth_mode: 'api_key', resident: 2, prompt_cache: true, pricing: {}, poll_interval: 2 };
      for (const [option, accepted] of Object.entries(row.options)) {
        const value = values[option as keyof typeof values];
        const backend = { name: 'b', url: 'http://127.0.0.1:1', type: row.type, [option]: value };
        const result = validateConfig({ backends: [backend] });
        const paths = result.ok ? [] : result.problems.map((p) => p.path);
        assert.deepEqual(paths, accepted ? [] : [`backends[0].${option}`], `${row.type} ${option}`);
      }
      assert.equal(kind.hasAuthMode, row.options.auth_mode);
      assert.equal(kind.defaults.resident !== undefined, row.options.resident);
      assert.equal(kind.translatesCacheControl, row.options.prompt_cache);
      assert.equal(kind.pricedPerToken, row.options.pricing);
    });
  });
}

describe('kind quirks read by the code', () => {
  test('llama.cpp 503 "Loading model" fails over without counting; llama-swap 502 "unable to start" counts', () => {
    assert.deepEqual(descriptorFor('openai').loadAnswers.length, 2);
    const loading = classifyStatus(503, '{"error":{"message":"Loading model","code":503}}');
    assert.deepEqual([loading.action, loading.action === 'failover' && loading.health], ['failover', 'none']);
    assert.equal(loading.action === 'failover' && loading.relayable, false);
    const start = classifyStatus(502, 'unable to start process: exit status 1');
    assert.deepEqual([start.action, start.action === 'failover' && start.health], ['failover', 'failure']);
    const broken = classifyStatus(503, 'Service Unavailable');
    assert.equal(broken.action === 'failover' && broken.relayable, true, 'any other 503 is the answer to relay');
  });

  test('an anthropic subscription token goes as a bearer token with the OAuth beta', () => {
    const headers = credentialHeaders(spec('anthropic', { api_key: KEY, auth_mode: 'subscription' }));
    assert.deepEqual(headers, { ...BEARER, ...ANTHROPIC_OWN, 'anthropic-beta': 'oauth-2025-04-20' });
  });

  test('residency: unpaid openai boxes read owned_by, ollama asks /api/ps, the others never', async (t) => {
    const box = await recorder(t);
    const reader = new ResidencyReader(5000);
    const models = [{ id: 'm1', owned_by: 'vllm' }];
    const read = (type: BackendType, paid = false) =>
      reader.read(spec(type, { url: box.url, paid }), models, box.agent).then((r) => [r.kind, r.mode, r.loaded]);
    assert.deepEqual(await read('openai'), ['vllm', 'all-listed', ['m1']]);
    assert.deepEqual(await read('openai', true), ['unknown', 'unknown', []]);
    assert.deepEqual(await read('anthropic'), ['unknown', 'unknown', []]);
    assert.deepEqual(await read('comfyui'), ['unknown', 'unknown', []]);
    assert.equal(box.seen.length, 0, 'nothing asked so far');
    assert.deepEqual(await read('ollama'), ['ollama', 'swap', ['m1']]);
    assert.deepEqual(
      box.seen.map((s) => s.path),
      ['/api/ps'],
    );
  });
});

test('no file outside config/ and backends/kinds/ compares a type with a kind name: it asks the descriptor', () => {
  const src = join(import.meta.dirname, '..', 'src');
  const kindCheck = /\btype\)? *[!=]== *'(openai|anthropic|comfyui|ollama)'/;
  const offenders = (readdirSync(src, { recursive: true }) as string[])
    .filter((file) => file.endsWith('.ts'))
    .map((file) => relative(src, join(src, file)))
    .filter((file) => !file.startsWith('config/') && !file.startsWith(join('backends', 'kinds')))
    .flatMap((file) =>
      readFileSync(join(src, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (kindCheck.test(line) ? [`src/${file}:${i + 1}: ${line.trim()}`] : [])),
    );
  assert.deepEqual(offenders, []);
});
