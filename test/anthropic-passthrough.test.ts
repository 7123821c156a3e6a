/**
 * Anthropic backends get the client's request verbatim: the body byte for byte apart from
 * `model`, the client's betas and version, the backend's own credential (an API key, or a
 * subscription token with the OAuth beta); the stream comes back unmodified, uncompressed and
 * unbuffered, and the call log reads its usage with the cache split.
 */
import assert from 'node:assert/strict';
import { request } from 'undici';
import { after, before, describe, test } from 'node:test';
import {
  ANTHROPIC_FAKE_API_KEY,
  ANTHROPIC_FAKE_OAUTH_TOKEN,
  OAUTH_BETA,
  startAnthropicFake,
  type AnthropicFake,
} from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const KEY = 'gw-key-passthrough';

/** A body with everything a rewrite would disturb: odd spacing, key order, escapes, a big integer, betas' fields. */
const rawBody = (model: string, stream: boolean) => `{ "max_tokens":  512 ,"model" : "${model}",
  "system": [{"type":"text","text":"You are terse.\\u00e9","cache_control":{"type":"ephemeral","ttl":"1h"}}],
  "messages":[{"role":"user","content":[{"type":"text","text":"caf\\u00e9 ☕","cache_control":{"type":"ephemeral"}}]},
    {"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"EvQBCkYICxgCKkAx+/=="},{"type":"text","text":"ok"}]},
    {"role":"user","content":"go on"}],
  "context_management":{"edits":[{"type":"clear_thinking_20251015","keep":{"type":"thinking_turns","value":1}}]},
  "output_config":{"effort":"high"}, "metadata":{"user_id":"u-1"}, "seed_like": 12345678901234567890,
  "stream": ${stream}, "tools":[{"name":"t","input_schema":{"type":"object"},"eager_input_streaming":true}] }`;

const post = (gw: TestGateway, body: string, headers: Record<string, string> = {}, path = '/v1/messages?beta=true') =>
  request(`${gw.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': KEY,
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'interleaved-thinking-2025-05-14,context-management-2025-06-27',
      'accept-encoding': 'gzip, br, zstd',
      'x-app': 'cli',
      'x-stainless-lang': 'js',
      ...headers,
    },
    body,
  });

describe('anthropic passthrough', () => {
  let claude: AnthropicFake;
  let sub: AnthropicFake;
  let gw: TestGateway;
  let messagesAtStart = -1;

  before(async () => {
    claude = await startAnthropicFake({ knobs: { cacheReadTokens: 120, cacheWriteTokens: 30 } });
    sub = await startAnthropicFake({ knobs: { modelsStatus: 401 } });
    gw = await startGateway(
      [
        { name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY },
        {
          name: 'sub',
          url: sub.url,
          type: 'anthropic',
          auth_mode: 'subscription',
          api_key: ANTHROPIC_FAKE_OAUTH_TOKEN,
          models: ['claude-opus-4-1-20250805'],
        },
      ],
      {
        api_key: KEY,
        virtual_models: { main: { claude: 'claude-sonnet-4-5-20250929' }, paid: { sub: 'claude-opus-4-1-20250805' } },
      },
    );
    messagesAtStart = [...claude.requests, ...sub.requests].filter((r) => r.path.startsWith('/v1/messages')).length;
  });
  after(async () => {
    await gw?.close();
    await claude?.close();
    await sub?.close();
  });

  test('the body arrives byte-identical apart from model, the query and the betas intact', async () => {
    for (const stream of [false, true]) {
      const res = await post(gw, rawBody('main', stream));
      const text = await res.body.text();
      assert.equal(res.statusCode, 200, text);
      const got = claude.requests.at(-1)!;
      assert.equal(got.rawBody, rawBody('claude-sonnet-4-5-20250929', stream));
      assert.equal(got.path, '/v1/messages');
      assert.equal(got.query, 'beta=true');
      assert.equal(got.headers['anthropic-beta'], 'interleaved-thinking-2025-05-14,context-management-2025-06-27');
      assert.equal(got.headers['anthropic-version'], '2023-06-01');
      assert.equal(got.headers['x-api-key'], ANTHROPIC_FAKE_API_KEY, "the backend's credential, never the client's");
      assert.equal(got.headers.authorization, undefined);
      assert.equal(got.headers['x-app'], 'cli');
      assert.notEqual(got.headers['accept-encoding'], 'gzip, br, zstd');
      assert.equal(res.headers['content-encoding'], undefined, 'never compressed');
      if (stream) {
        assert.match(String(res.headers['content-type']), /^text\/event-stream/);
        assert.match(text, /^event: message_start\n/);
        assert.match(text, /event: message_stop\ndata: \{"type":"message_stop"\}\n\n$/);
      }
    }
  });

  test("any anthropic-version passes as the client sent it; none gets the gateway's default", async () => {
    await (await post(gw, rawBody('main', false), { 'anthropic-version': '2026-10-21' })).body.text();
    assert.equal(claude.requests.at(-1)!.headers['anthropic-version'], '2026-10-21');
    const res = await request(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: rawBody('main', false),
    });
    assert.equal(res.statusCode, 200, await res.body.text());
    assert.equal(claude.requests.at(-1)!.headers['anthropic-version'], '2023-06-01');
  });

  test('the stream is relayed unmodified: the same bytes a direct call gets, ids aside', async () => {
    const normalise = (s: string) => s.replace(/(msg|toolu|req)_[A-Za-z0-9]+/g, '$1_X');
    const viaGateway = await (await post(gw, rawBody('main', true))).body.text();
    const direct = await (
      await request(`${claude.url}/v1/messages?beta=true`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': ANTHROPIC_FAKE_API_KEY,
          'anthropic-version': '2023-06-01',
        },
        body: rawBody('claude-sonnet-4-5-20250929', true),
      })
    ).body.text();
    assert.equal(normalise(viaGateway), normalise(direct));
  });

  test('a subscription token goes as a Bearer token with the OAuth beta appended', async () => {
    const res = await post(gw, rawBody('paid', false));
    assert.equal(res.statusCode, 200, await res.body.text());
    const got = sub.requests.at(-1)!;
    assert.equal(got.headers.authorization, `Bearer ${ANTHROPIC_FAKE_OAUTH_TOKEN}`);
    assert.equal(got.headers['x-api-key'], undefined);
    assert.equal(
      got.headers['anthropic-beta'],
      `interleaved-thinking-2025-05-14,context-management-2025-06-27,${OAUTH_BETA}`,
    );
  });

  test('a backend that will not list models to its token serves the configured list and stays up', () => {
    const backend = gw.gateway.registry.get('sub')!;
    assert.equal(backend.healthy, true);
    assert.deepEqual(
      backend.models.map((m) => m.id),
      ['claude-opus-4-1-20250805'],
    );
    assert.ok(
      sub.requests.some((r) => r.path === '/v1/models'),
      'it was asked first',
    );
    assert.equal(messagesAtStart, 0, 'discovery and health never sent a completion');
  });

  test('the call log has both calls with the cache split from message_start / message_delta', async () => {
    for (const stream of [false, true]) {
      const before = gw.gateway.callLog.recent({ backend: 'claude' }).length;
      await (await post(gw, rawBody('main', stream))).body.text();
      await waitFor(() => gw.gateway.callLog.recent({ backend: 'claude' }).length > before, 'row queued');
      const [row] = gw.gateway.callLog.recent({ backend: 'claude' });
      assert.equal(row.endpoint, '/v1/messages');
      assert.equal(row.requested_model, 'main');
      assert.equal(row.model, 'claude-sonnet-4-5-20250929');
      assert.equal(row.cached_tokens, 120, `stream=${stream}`);
      assert.equal(row.cache_write_tokens, 30);
      assert.ok(row.prompt_tokens >= 150 + 1, 'input + cache reads + cache writes');
      assert.ok(row.completion_tokens > 0);
      assert.equal(row.status, 200);
    }
  });
});
