/**
 * /v1/messages goes through the same scheduler as chat: a mixed alias fails over from a dead
 * anthropic backend to its chat backend before the first byte (translated, invisibly), and a
 * parked stream is kept open with `event: ping` until a slot frees.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { request } from 'undici';
import {
  ANTHROPIC_FAKE_API_KEY,
  startAnthropicFake,
  startFake,
  type AnthropicFake,
  type FakeBackend,
} from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'gw-master-failover';

describe('Messages through the scheduler', () => {
  let claude: AnthropicFake;
  let local: FakeBackend;
  let gw: TestGateway;

  before(async () => {
    claude = await startAnthropicFake();
    local = await startFake('llamacpp', { models: ['qwen3-8b'] });
    gw = await startGateway(
      [
        { name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY },
        // paid: tried only after the anthropic one, which is free here
        { name: 'local', url: local.url, paid: true, max_concurrent: 1 },
      ],
      {
        api_key: MASTER,
        stream_keepalive_s: 0.2,
        failure_threshold: 100,
        virtual_models: {
          mixed: { claude: 'claude-sonnet-4-5-20250929', local: 'qwen3-8b' },
          l: { local: 'qwen3-8b' },
        },
      },
    );
  });
  after(async () => {
    await gw?.close();
    await claude?.close();
    await local?.close();
  });

  test('a dead anthropic backend fails over to the chat backend before the first byte', async () => {
    claude.setKnobs({ refuse: true });
    try {
      const sdk = new Anthropic({ baseURL: gw.url, apiKey: MASTER, maxRetries: 0 });
      const { data, response } = await sdk.messages
        .create({ model: 'mixed', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      assert.equal(response.headers.get('x-gateway-backend'), 'local');
      assert.equal(data.type, 'message');
      assert.equal(data.model, 'mixed');
      const streamed = await sdk.messages
        .stream({ model: 'mixed', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
        .finalMessage();
      assert.equal(streamed.stop_reason, 'end_turn');
      assert.ok(streamed.content.some((b) => b.type === 'text'));
    } finally {
      claude.setKnobs({ refuse: false });
    }
  });

  test('a parked stream gets event: ping until a slot frees, then its answer', async () => {
    local.setKnobs({ tokensPerSecond: 20, chunkCount: 16 });
    try {
      const body = JSON.stringify({
        model: 'l',
        max_tokens: 64,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      });
      const headers = { 'content-type': 'application/json', 'x-api-key': MASTER, 'anthropic-version': '2023-06-01' };
      const first = request(`${gw.url}/v1/messages`, { method: 'POST', headers, body });
      await waitFor(() => local.inflight === 1, 'the first call holds the only slot');
      const second = await request(`${gw.url}/v1/messages`, { method: 'POST', headers, body });
      const text = await second.body.text();
      await (await first).body.text();
      const events = [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
      const start = events.indexOf('message_start');
      assert.ok(
        start > 0 && events.slice(0, start).every((e) => e === 'ping'),
        `pings while parked: ${events.slice(0, 4).join(', ')}`,
      );
      assert.match(text, /^event: ping\ndata: \{"type": "ping"\}\n\n/);
      assert.equal(events.at(-1), 'message_stop');
    } finally {
      local.setKnobs({ tokensPerSecond: 0, chunkCount: 8 });
    }
  });
});

test("a max_tokens the chat backend's context cannot hold is left out; one that fits is kept", async (t) => {
  const vllm = await startFake('vllm', { models: ['acme/Qwen3-8B-Instruct'] });
  const gw = await startGateway([{ name: 'v', url: vllm.url }], {
    api_key: MASTER,
    virtual_models: { q: { v: 'acme/Qwen3-8B-Instruct' } },
  });
  t.after(async () => {
    await gw.close();
    await vllm.close();
  });
  assert.equal(gw.gateway.registry.get('v')!.modelsById.get('acme/Qwen3-8B-Instruct')?.context_length, 32768);
  const sdk = new Anthropic({ baseURL: gw.url, apiKey: MASTER, maxRetries: 0 });
  for (const [asked, sent] of [
    [64000, undefined],
    [1000, 1000],
  ] as const) {
    await sdk.messages
      .stream({ model: 'q', max_tokens: asked, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    assert.equal(vllm.requests.at(-1)!.body.max_tokens, sent, `asked ${asked}`);
  }
});
