/**
 * The licence boundary: an anthropic backend answers only POST /v1/messages*. Every other
 * endpoint refuses a model only anthropic backends serve with a 404 naming the way in (or the
 * plain unknown-model 404 for a caller who could not use it there), never touching the
 * backend; a mixed alias is served there by its chat backends only. `/v1/models` lists such
 * models marked, for callers who may use them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import {
  ANTHROPIC_FAKE_API_KEY,
  startAnthropicFake,
  startFake,
  type AnthropicFake,
  type FakeBackend,
} from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const MASTER = 'gw-master-boundary';
const CLAUDE_ID = 'claude-sonnet-4-5-20250929';

describe('licence boundary', () => {
  let claude: AnthropicFake;
  let local: FakeBackend;
  let gw: TestGateway;
  let limitedKey: string;

  const call = (path: string, body: unknown, key = MASTER) =>
    request(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });
  const generationRequests = () => claude.requests.filter((r) => r.method === 'POST').length;

  before(async () => {
    claude = await startAnthropicFake();
    local = await startFake('llamacpp', { models: ['qwen3-8b'] });
    gw = await startGateway(
      [
        { name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY, local: true },
        { name: 'local', url: local.url },
      ],
      {
        api_key: MASTER,
        virtual_models: {
          'claude-only': { claude: CLAUDE_ID },
          mixed: { claude: CLAUDE_ID, local: 'qwen3-8b' },
          'c-*': 'claude-only',
        },
      },
    );
    limitedKey = gw.gateway.users.create({ name: 'kid', allow: ['local'] }).key;
  });
  after(async () => {
    await gw?.close();
    await claude?.close();
    await local?.close();
  });

  const bodies: Record<string, (model: string) => Record<string, unknown>> = {
    '/v1/chat/completions': (model) => ({ model, messages: [{ role: 'user', content: 'hi' }] }),
    '/v1/completions': (model) => ({ model, prompt: 'hi' }),
    '/v1/embeddings': (model) => ({ model, input: 'hi' }),
    '/v1/responses': (model) => ({ model, input: 'hi' }),
    '/v1/audio/speech': (model) => ({ model, input: 'hi', voice: 'alloy' }),
  };

  test('every other endpoint answers 404 naming POST /v1/messages, and the backend never hears of it', async () => {
    const before = generationRequests();
    for (const [path, body] of Object.entries(bodies)) {
      for (const model of ['claude-only', `claude/${CLAUDE_ID}`, CLAUDE_ID, 'c-anything']) {
        const res = await call(path, body(model));
        const json = (await res.body.json()) as { error: { message: string; code: string; param: string } };
        assert.equal(res.statusCode, 404, `${path} ${model}`);
        assert.equal(json.error.code, 'model_not_found');
        assert.match(json.error.message, /POST \/v1\/messages/, `${path} ${model}: ${json.error.message}`);
      }
    }
    assert.equal(generationRequests(), before);
  });

  test('a caller who may not use the model there gets the plain unknown-model 404', async () => {
    const res = await call('/v1/chat/completions', bodies['/v1/chat/completions']('claude-only'), limitedKey);
    const json = (await res.body.json()) as { error: { message: string } };
    assert.equal(res.statusCode, 404);
    assert.doesNotMatch(json.error.message, /messages/);
  });

  test('a mixed alias is served by its chat backend only, even when that one is down', async () => {
    const ok = await call('/v1/chat/completions', bodies['/v1/chat/completions']('mixed'));
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.headers['x-gateway-backend'], 'local');
    await ok.body.text();
    local.setKnobs({ refuse: true });
    try {
      const before = generationRequests();
      for (const path of ['/v1/chat/completions', '/v1/responses']) {
        const down = await call(path, bodies[path]('mixed'));
        await down.body.text();
        assert.ok(down.statusCode >= 500, `${path}: status ${down.statusCode}`);
      }
      assert.equal(generationRequests(), before, 'never failed over to the anthropic backend');
    } finally {
      local.setKnobs({ refuse: false });
    }
  });

  test('/v1/models lists messages-only models marked, only for callers who could use them', async () => {
    const list = async (key: string) => {
      const res = await request(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      return ((await res.body.json()) as { data: { id: string; endpoints?: string[] }[] }).data;
    };
    const all = await list(MASTER);
    const byId = new Map(all.map((m) => [m.id, m]));
    assert.deepEqual(byId.get('claude-only')?.endpoints, ['/v1/messages']);
    assert.deepEqual(byId.get(`claude/${CLAUDE_ID}`)?.endpoints, ['/v1/messages']);
    assert.equal(byId.get('mixed')?.endpoints, undefined, 'chat endpoints can serve it');
    assert.equal(byId.get('local/qwen3-8b')?.endpoints, undefined);
    assert.ok(!byId.has('c-*'), 'patterns are not listed');
    const limited = await list(limitedKey);
    assert.ok(!limited.some((m) => m.id === 'claude-only' || m.endpoints), limited.map((m) => m.id).join(', '));
  });

  test('an Anthropic client gets the list in Anthropic shape, paged', async () => {
    const res = await request(`${gw.url}/v1/models?limit=2`, {
      headers: { 'x-api-key': MASTER, 'anthropic-version': '2023-06-01' },
    });
    const page = (await res.body.json()) as {
      data: { type: string; id: string; display_name: string; created_at: string }[];
      has_more: boolean;
      last_id: string;
    };
    assert.equal(page.data.length, 2);
    assert.equal(page.has_more, true);
    assert.equal(page.data[0].type, 'model');
    assert.ok(!Number.isNaN(Date.parse(page.data[0].created_at)));
    const next = await request(`${gw.url}/v1/models?limit=1000&after_id=${encodeURIComponent(page.last_id)}`, {
      headers: { 'x-api-key': MASTER, 'anthropic-version': '2023-06-01' },
    });
    const rest = (await next.body.json()) as { data: { id: string }[]; has_more: boolean };
    assert.equal(rest.has_more, false);
    assert.ok(!rest.data.some((m) => page.data.some((p) => p.id === m.id)), 'no overlap');
  });

  test('/v1/messages reaches the anthropic backend', async () => {
    const res = await request(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': MASTER, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-only', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.statusCode, 200, await res.body.text());
    assert.equal(res.headers['x-gateway-backend'], 'claude');
  });
});
