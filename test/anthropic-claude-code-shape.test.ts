/**
 * A request shaped like Claude Code's (76 KB, 24 tools, system blocks with cache_control, a
 * `role:"system"` message inside `messages`, `?beta=true`, eight betas, adaptive thinking)
 * answered on both paths: translated for a local chat backend reached through a glob alias
 * (the CLI's default model id), and verbatim for an anthropic backend.
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
import { claudeCodeShapedRequest } from './helpers/claude-code-request.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const MASTER = 'gw-master-claude-code';

describe('a Claude-Code-shaped request', () => {
  let claude: AnthropicFake;
  let local: FakeBackend;
  let gw: TestGateway;

  const send = (shaped: ReturnType<typeof claudeCodeShapedRequest>, body = JSON.stringify(shaped.body)) =>
    request(`${gw.url}${shaped.path}`, {
      method: 'POST',
      headers: { ...shaped.headers, 'x-api-key': MASTER, 'accept-encoding': 'gzip, deflate, br, zstd' },
      body,
    });

  before(async () => {
    claude = await startAnthropicFake();
    local = await startFake('llamacpp', { models: ['qwen3-coder'], knobs: { reasoningChunks: 2 } });
    gw = await startGateway(
      [
        { name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY },
        { name: 'local', url: local.url },
      ],
      {
        api_key: MASTER,
        virtual_models: { 'claude-*': { local: 'qwen3-coder' }, 'cc-pass': { claude: 'claude-sonnet-4-5-20250929' } },
      },
    );
  });
  after(async () => {
    await gw?.close();
    await claude?.close();
    await local?.close();
  });

  test('translated: a local model answers the stream; the chat call carries every tool and the system parts in place', async () => {
    const shaped = claudeCodeShapedRequest();
    const res = await send(shaped);
    const text = await res.body.text();
    assert.equal(res.statusCode, 200, text.slice(0, 300));
    assert.equal(res.headers['x-gateway-backend'], 'local');
    assert.equal(res.headers['content-encoding'], undefined);
    const events = [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    assert.equal(events[0], 'message_start');
    assert.equal(events.at(-1), 'message_stop');
    assert.ok(events.includes('content_block_delta'));
    const sent = local.requests.at(-1)!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.body.model, 'qwen3-coder');
    assert.equal(sent.body.tools.length, 24);
    assert.equal(sent.body.stream, true);
    const roles = sent.body.messages.map((m: { role: string }) => m.role);
    assert.equal(roles[0], 'system', 'the system blocks lead');
    assert.deepEqual(roles.slice(1), ['user', 'system'], 'the system message inside messages stays where it was');
    assert.equal(sent.headers['anthropic-beta'], undefined, 'Anthropic headers stay at the gateway');
    assert.equal(sent.body.thinking, undefined);
    assert.equal(sent.body.context_management, undefined);
  });

  test('translated, non-stream (the CLI falls back to it when a stream fails)', async () => {
    const shaped = claudeCodeShapedRequest({ stream: false });
    const res = await send(shaped);
    const message = (await res.body.json()) as { type: string; model: string; content: { type: string }[] };
    assert.equal(res.statusCode, 200);
    assert.equal(message.type, 'message');
    assert.equal(message.model, 'claude-opus-4-8', 'the name the CLI asked for');
    assert.ok(message.content.some((b) => b.type === 'text'));
  });

  test('passthrough: byte-identical apart from model, with its betas and query', async () => {
    const shaped = claudeCodeShapedRequest({ model: 'cc-pass' });
    const raw = JSON.stringify(shaped.body);
    const res = await send(shaped, raw);
    const text = await res.body.text();
    assert.equal(res.statusCode, 200, text.slice(0, 300));
    const got = claude.requests.at(-1)!;
    assert.equal(got.rawBody, raw.replace('"model":"cc-pass"', '"model":"claude-sonnet-4-5-20250929"'));
    assert.equal(got.query, 'beta=true');
    assert.equal(got.headers['anthropic-beta'], shaped.headers['anthropic-beta']);
    assert.match(text, /event: message_stop/);
  });
});
