/**
 * End to end with the official `@anthropic-ai/sdk`: the same calls on a translated alias (a
 * llama.cpp backend behind the Messages ⇄ chat bridge) and on a passthrough alias (an
 * anthropic backend), judged by the SDK's own parser and accumulator.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { ANTHROPIC_FAKE_API_KEY, startAnthropicFake, type AnthropicFake } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const CLIENT_KEY = 'gw-master-key-123';
const tools = [
  {
    name: 'get_weather',
    description: 'Weather of a city',
    input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

describe('the Anthropic SDK through the gateway', () => {
  let local: FakeBackend;
  let claude: AnthropicFake;
  let gw: TestGateway;
  const sdk = (opts: ConstructorParameters<typeof Anthropic>[0] = {}) =>
    new Anthropic({ baseURL: gw.url, apiKey: CLIENT_KEY, maxRetries: 0, timeout: 10_000, ...opts });

  before(async () => {
    local = await startFake('llamacpp', { models: ['qwen3-8b'], knobs: { reasoningChunks: 3 } });
    claude = await startAnthropicFake();
    gw = await startGateway(
      [
        { name: 'local', url: local.url },
        { name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY, paid: true },
      ],
      {
        api_key: CLIENT_KEY,
        virtual_models: { translated: { local: 'qwen3-8b' }, passthrough: { claude: 'claude-sonnet-4-5-20250929' } },
      },
    );
  });
  after(async () => {
    await gw?.close();
    await local?.close();
    await claude?.close();
  });

  for (const alias of ['translated', 'passthrough'] as const) {
    describe(`on the ${alias} alias`, () => {
      test('messages.create answers one message with usage', async () => {
        const { data, response } = await sdk()
          .messages.create({
            model: alias,
            max_tokens: 200,
            messages: [{ role: 'user', content: 'hello there' }],
          })
          .withResponse();
        assert.equal(data.type, 'message');
        assert.equal(data.role, 'assistant');
        const text = data.content.find((b) => b.type === 'text');
        assert.ok(text && text.type === 'text' && text.text.length > 0, 'a text block');
        assert.equal(data.stop_reason, 'end_turn');
        assert.ok(data.usage.input_tokens > 0 && data.usage.output_tokens > 0);
        assert.equal(response.headers.get('x-gateway-backend'), alias === 'translated' ? 'local' : 'claude');
        if (alias === 'translated') assert.equal(data.model, 'translated', 'the name the client asked for');
      });

      test('messages.stream().finalMessage() with thinking', async () => {
        const stream = sdk().messages.stream({
          model: alias,
          max_tokens: 2000,
          thinking: { type: 'enabled', budget_tokens: 1024 },
          messages: [{ role: 'user', content: 'think first' }],
        });
        const deltas: string[] = [];
        stream.on('text', (t) => deltas.push(t));
        const message = await stream.finalMessage();
        assert.deepEqual(
          message.content.map((b) => b.type),
          ['thinking', 'text'],
        );
        const thinking = message.content[0];
        assert.ok(thinking.type === 'thinking' && thinking.thinking.length > 0);
        assert.ok(deltas.length > 1, 'text arrived in several deltas');
        assert.equal(message.stop_reason, 'end_turn');
      });

      test('a tool_use round trip', async () => {
        const forced = { type: 'tool' as const, name: 'get_weather' };
        if (alias === 'translated')
          local.setKnobs({ toolCall: true, toolCallName: 'get_weather', toolCallArguments: '{"city":"Oslo"}' });
        else claude.setKnobs({ toolUse: 'get_weather', toolInput: { city: 'Oslo' } });
        try {
          const first = await sdk()
            .messages.stream({
              model: alias,
              max_tokens: 300,
              tools,
              tool_choice: forced,
              messages: [{ role: 'user', content: 'weather in Oslo?' }],
            })
            .finalMessage();
          assert.equal(first.stop_reason, 'tool_use');
          const use = first.content.find((b) => b.type === 'tool_use');
          assert.ok(use && use.type === 'tool_use');
          assert.equal(use.name, 'get_weather');
          assert.deepEqual(use.input, { city: 'Oslo' });
          assert.match(use.id, /^toolu_/);
          if (alias === 'translated') local.setKnobs({ toolCall: false });
          else claude.setKnobs({ toolUse: undefined });
          const second = await sdk().messages.create({
            model: alias,
            max_tokens: 300,
            tools,
            messages: [
              { role: 'user', content: 'weather in Oslo?' },
              { role: 'assistant', content: first.content },
              { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 18 °C' }] },
            ],
          });
          assert.equal(second.stop_reason, 'end_turn');
          if (alias === 'translated') {
            const sent = local.requests.at(-1)!.body;
            const toolMessage = sent.messages.find((m: { role: string }) => m.role === 'tool');
            assert.equal(toolMessage.content, 'sunny, 18 °C');
            const assistant = sent.messages.find((m: { role: string }) => m.role === 'assistant');
            assert.equal(assistant.tool_calls[0].function.name, 'get_weather');
            assert.equal(
              toolMessage.tool_call_id,
              assistant.tool_calls[0].id,
              'the result answers the call it belongs to',
            );
          } else {
            assert.equal(claude.requests.at(-1)!.body.messages[2].content[0].tool_use_id, use.id);
          }
        } finally {
          local.setKnobs({ toolCall: false });
          claude.setKnobs({ toolUse: undefined });
        }
      });

      test('countTokens answers without taking a slot, growing with the prompt', async () => {
        const generations = () =>
          local.requests.filter((r) => r.path === '/v1/chat/completions').length +
          claude.requests.filter((r) => r.path === '/v1/messages').length;
        const before = generations();
        const short = await sdk().messages.countTokens({ model: alias, messages: [{ role: 'user', content: 'hi' }] });
        const long = await sdk().messages.countTokens({
          model: alias,
          tools,
          messages: [{ role: 'user', content: 'hi '.repeat(500) }],
        });
        assert.ok(short.input_tokens > 0);
        assert.ok(long.input_tokens > short.input_tokens + 100, `${long.input_tokens} > ${short.input_tokens}`);
        assert.equal(generations(), before, 'no generation was sent to count');
        if (alias === 'passthrough')
          assert.ok(
            claude.requests.some((r) => r.path === '/v1/messages/count_tokens'),
            'the anthropic backend counted',
          );
      });

      test('both auth headers work: x-api-key and Authorization: Bearer', async () => {
        const viaKey = await sdk({ apiKey: CLIENT_KEY }).messages.create({
          model: alias,
          max_tokens: 50,
          messages: [{ role: 'user', content: 'a' }],
        });
        const viaBearer = await sdk({ apiKey: null, authToken: CLIENT_KEY }).messages.create({
          model: alias,
          max_tokens: 50,
          messages: [{ role: 'user', content: 'b' }],
        });
        assert.equal(viaKey.type, 'message');
        assert.equal(viaBearer.type, 'message');
        await assert.rejects(
          sdk({ apiKey: 'wrong-key' }).messages.create({
            model: alias,
            max_tokens: 50,
            messages: [{ role: 'user', content: 'c' }],
          }),
          (err: unknown) => err instanceof Anthropic.AuthenticationError,
        );
      });

      test('stream.abort() frees the slot, and the next call works', async () => {
        const slow = alias === 'translated' ? local : claude;
        slow.setKnobs({ tokensPerSecond: 20, chunkCount: 100 });
        try {
          const stream = sdk().messages.stream({
            model: alias,
            max_tokens: 500,
            messages: [{ role: 'user', content: 'long one' }],
          });
          await new Promise<void>((resolve) => stream.once('text', () => resolve()));
          stream.abort();
          await assert.rejects(stream.finalMessage());
          const deadline = Date.now() + 3000;
          while (slow.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
          assert.equal(slow.inflight, 0, 'the upstream request was aborted too');
          assert.ok(
            gw.gateway.scheduler.snapshot().backends.every((b) => b.inflight === 0),
            'the slot came back',
          );
        } finally {
          slow.setKnobs({ tokensPerSecond: 0, chunkCount: 8 });
        }
        const next = await sdk().messages.create({
          model: alias,
          max_tokens: 50,
          messages: [{ role: 'user', content: 'again' }],
        });
        assert.equal(next.type, 'message');
      });
    });
  }
});
