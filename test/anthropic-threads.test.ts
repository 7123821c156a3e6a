/**
 * The Anthropic SDK's message threads (`@anthropic-ai/sdk` ≥ 1.2, beta
 * `message-threads-2026-08-12`) through the gateway, driven by the SDK's own
 * `beta.messages.toolRunner`: it sends its first turn with `thread: {type: "create"}` and each
 * later one as only the new tool_result with `thread: {type: "continue", previous_message_id}`
 * (no `system`, no `tools`). A chat backend holds no thread, so the gateway refuses a threaded
 * request there with `error.details.error_code: "thread_unsupported_request"`, which makes the
 * runner send the full history without `thread`; an anthropic backend gets `thread` untouched.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { ANTHROPIC_FAKE_API_KEY, startAnthropicFake, type AnthropicFake } from './fakes/index.ts';
import { THREADS_BETA } from './fakes/anthropic-threads.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const CLIENT_KEY = 'gw-master-key-123';

const weatherTool = (seen: string[]) =>
  betaTool({
    name: 'get_weather',
    description: 'Weather of a city',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    run: ({ city }) => {
      seen.push(city);
      return `sunny in ${city}, 18 °C`;
    },
  });

describe('the Anthropic SDK tool runner over message threads', () => {
  let local: FakeBackend;
  let claude: AnthropicFake;
  let doomed: AnthropicFake;
  let doomedDown: Promise<void> | undefined;
  /** Stops the backend behind `gone` once, and lets the gateway notice. */
  const takeGoneDown = () => (doomedDown ??= doomed.close().then(() => gw.gateway.discovery.pollAll()));
  let gw: TestGateway;
  const sdk = () => new Anthropic({ baseURL: gw.url, apiKey: CLIENT_KEY, maxRetries: 0, timeout: 10_000 });
  /** The tool runner asking `model` for Oslo's weather, the chat backend calling the tool once; what reached it. */
  const runOnChatBackend = async (model: string, stream: boolean, system?: string) => {
    local.setKnobs({
      toolCall: true,
      toolCallOnce: true,
      toolCallName: 'get_weather',
      toolCallArguments: '{"city":"Oslo"}',
    });
    const from = local.requests.length;
    try {
      const seen: string[] = [];
      const runner = sdk().beta.messages.toolRunner({
        model,
        max_tokens: 300,
        ...(system ? { system } : {}),
        tools: [weatherTool(seen)],
        max_iterations: 4,
        messages: [{ role: 'user', content: 'weather in Oslo?' }],
        ...(stream ? { stream: true as const } : {}),
      });
      const final = await runner.runUntilDone();
      const chats = local.requests.slice(from).filter((r) => r.path === '/v1/chat/completions');
      return { seen, final, chats };
    } finally {
      local.setKnobs({ toolCall: false, toolCallOnce: false });
    }
  };

  before(async () => {
    local = await startFake('llamacpp', { models: ['qwen3-8b'] });
    claude = await startAnthropicFake();
    doomed = await startAnthropicFake();
    gw = await startGateway(
      [
        { name: 'local', url: local.url },
        { name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY, paid: true },
        // an anthropic backend that goes down once its models are known
        { name: 'gone', url: doomed.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY, paid: true },
      ],
      {
        api_key: CLIENT_KEY,
        virtual_models: {
          translated: { local: 'qwen3-8b' },
          passthrough: { claude: 'claude-sonnet-4-5-20250929' },
          fallback: { gone: 'claude-sonnet-4-5-20250929', local: 'qwen3-8b' },
        },
      },
    );
  });
  after(async () => {
    await gw?.close();
    await local?.close();
    await claude?.close();
    if (!doomedDown) await doomed?.close();
  });

  for (const stream of [false, true]) {
    test(`translated (${stream ? 'stream' : 'non-stream'}): refused the thread, the runner sends all`, async () => {
      const { seen, final, chats } = await runOnChatBackend('translated', stream, 'You are terse.');
      assert.deepEqual(seen, ['Oslo'], 'the tool ran once');
      assert.equal(final.stop_reason, 'end_turn');
      assert.equal(chats.length, 2, 'two turns reached the chat backend, the refused one did not');
      const second = chats[1]!.body;
      assert.deepEqual(
        second.messages.map((m: { role: string }) => m.role),
        ['system', 'user', 'assistant', 'tool'],
      );
      const [, , assistant, tool] = second.messages;
      assert.equal(assistant.tool_calls[0].id, tool.tool_call_id, 'the result follows its call');
      assert.equal(second.tools?.[0]?.function?.name, 'get_weather', 'the tools came along');
    });
  }

  test('translated: a threaded request is refused with the code the SDK recovers from', async () => {
    const error = await sdk()
      .beta.messages.create({
        model: 'translated',
        max_tokens: 50,
        betas: [THREADS_BETA],
        thread: { type: 'create' },
        messages: [{ role: 'user', content: 'hi' }],
      } as Anthropic.Beta.Messages.MessageCreateParamsNonStreaming)
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.ok(error instanceof Anthropic.APIError, 'an API error');
    assert.equal(error.status, 400);
    assert.equal(error.errorCode, 'thread_unsupported_request');
    assert.equal((error.error as { error: { type: string } }).error.type, 'invalid_request_error');
  });

  for (const stream of [false, true]) {
    const mode = stream ? 'stream' : 'non-stream';
    test(`translated (${mode}): the refused turn is on record, charged to no backend and no quota`, async () => {
      const created = await fetch(`${gw.url}/admin/api/users`, {
        method: 'POST',
        headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `threads-${stream}`, allow: ['translated'], quota_req_day: 2 }),
      });
      assert.equal(created.status, 201);
      const user = (await created.json()) as { id: number; key: string };
      local.setKnobs({
        toolCall: true,
        toolCallOnce: true,
        toolCallName: 'get_weather',
        toolCallArguments: '{"city":"Oslo"}',
      });
      try {
        const client = new Anthropic({ baseURL: gw.url, apiKey: user.key, maxRetries: 0, timeout: 10_000 });
        const runner = client.beta.messages.toolRunner({
          model: 'translated',
          max_tokens: 300,
          tools: [weatherTool([])],
          max_iterations: 4,
          messages: [{ role: 'user', content: 'weather in Oslo?' }],
          ...(stream ? { stream: true as const } : {}),
        });
        const final = await runner.runUntilDone();
        assert.equal(final.stop_reason, 'end_turn', 'two answered turns fit a quota of two: the refusal costs none');
      } finally {
        local.setKnobs({ toolCall: false, toolCallOnce: false });
      }
      const rows = gw.gateway.callLog.recent({ user_id: user.id }).sort((a, b) => a.ts - b.ts);
      assert.deepEqual(
        rows.map((r) => [r.status, r.backend, r.reason]),
        [
          [400, '(refused)', 'thread_unsupported_request'],
          [200, 'local', null],
          [200, 'local', null],
        ],
      );
      assert.equal(gw.gateway.callLog.quotas.requestsSince(user.id, Date.now() - 86_400_000), 2);
    });
  }

  for (const stream of [false, true]) {
    const mode = stream ? 'stream' : 'non-stream';
    test(`mixed alias, its anthropic backend down (${mode}): the runner falls back unthreaded`, async () => {
      await takeGoneDown();
      const { seen, final, chats } = await runOnChatBackend('fallback', stream);
      assert.deepEqual(seen, ['Oslo']);
      assert.equal(final.stop_reason, 'end_turn');
      assert.equal(chats.length, 2, 'both turns served by the chat backend');
    });
  }

  for (const stream of [false, true]) {
    test(`passthrough (${stream ? 'stream' : 'non-stream'}): the thread reaches the backend untouched`, async () => {
      claude.setKnobs({ toolUse: 'get_weather', toolInput: { city: 'Oslo' }, toolUseOnce: true });
      const from = claude.requests.length;
      try {
        const seen: string[] = [];
        const runner = sdk().beta.messages.toolRunner({
          model: 'passthrough',
          max_tokens: 300,
          system: 'You are terse.',
          tools: [weatherTool(seen)],
          max_iterations: 4,
          messages: [{ role: 'user', content: 'weather in Oslo?' }],
          ...(stream ? { stream: true as const } : {}),
        });
        const replies: string[] = [];
        for await (const item of runner) replies.push(('finalMessage' in item ? await item.finalMessage() : item).id);
        assert.deepEqual(seen, ['Oslo']);
        const turns = claude.requests.slice(from).filter((r) => r.path === '/v1/messages');
        assert.equal(turns.length, 2);
        assert.deepEqual(turns[0]!.body.thread, { type: 'create' });
        assert.deepEqual(turns[1]!.body.thread, { type: 'continue', previous_message_id: replies[0] });
        assert.deepEqual(
          turns[1]!.body.messages.map((m: { role: string }) => m.role),
          ['user'],
          'only the new turn',
        );
        assert.equal(turns[1]!.body.messages[0].content[0].type, 'tool_result');
        assert.equal(turns[1]!.body.tools, undefined, 'a continue leaves the tools to the thread');
        for (const turn of turns) assert.match(String(turn.headers['anthropic-beta']), new RegExp(THREADS_BETA));
        assert.equal(turns[1]!.rawBody.includes('"thread":{"type":"continue"'), true, 'the bytes as the SDK sent them');
      } finally {
        claude.setKnobs({ toolUse: undefined, toolUseOnce: false });
      }
    });
  }
});
