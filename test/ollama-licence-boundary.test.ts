/**
 * The licence boundary on Ollama's API: an anthropic backend answers only `/v1/messages*`, so
 * `/api/tags` never lists a model only it serves, `/api/chat` and `/api/generate` refuse such a
 * model with an Ollama-shaped 404 that names the way in, without touching the backend, and a
 * mixed alias is served by its chat backend alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ollama } from 'ollama';
import {
  ANTHROPIC_FAKE_API_KEY,
  startAnthropicFake,
  startFake,
  type AnthropicFake,
  type FakeBackend,
} from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const CLAUDE_ID = 'claude-sonnet-4-5-20250929';

describe('the licence boundary on /api/*', () => {
  let claude: AnthropicFake;
  let local: FakeBackend;
  let gw: TestGateway;
  const toClaude = () => claude.requests.filter((r) => r.method === 'POST').length;

  before(async () => {
    claude = await startAnthropicFake();
    local = await startFake('llamacpp', { models: ['qwen3-8b'] });
    gw = await startGateway(
      [
        { name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY, local: true },
        { name: 'local', url: local.url },
      ],
      { virtual_models: { 'claude-only': { claude: CLAUDE_ID }, mixed: { claude: CLAUDE_ID, local: 'qwen3-8b' } } },
    );
  });
  after(async () => {
    await gw?.close();
    await claude?.close();
    await local?.close();
  });

  test('/api/tags lists no model only an anthropic backend serves', async () => {
    const names = (await new Ollama({ host: gw.url }).list()).models.map((m) => m.name);
    assert.ok(names.includes('mixed') && names.includes('local/qwen3-8b'), names.join(', '));
    for (const hidden of ['claude-only', CLAUDE_ID, `claude/${CLAUDE_ID}`]) assert.ok(!names.includes(hidden), hidden);
  });

  test("chat and generate refuse it in Ollama's shape, naming /v1/messages; the backend is never asked", async () => {
    const before = toClaude();
    for (const [path, body] of [
      ['/api/chat', { model: 'claude-only', messages: [{ role: 'user', content: 'hi' }] }],
      ['/api/generate', { model: CLAUDE_ID, prompt: 'hi', stream: false }],
    ] as const) {
      const res = await fetch(`${gw.url}${path}`, { method: 'POST', body: JSON.stringify(body) });
      assert.equal(res.status, 404, path);
      const json = (await res.json()) as Record<string, string>;
      assert.deepEqual(Object.keys(json), ['error']);
      assert.match(json.error!, /\/v1\/messages/);
    }
    assert.equal(toClaude(), before);
  });

  test('a mixed alias is served by its chat backend alone', async () => {
    const before = toClaude();
    const answer = await new Ollama({ host: gw.url }).chat({
      model: 'mixed',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.ok(answer.message.content.startsWith('tok0'));
    assert.equal(toClaude(), before);
  });
});
