import { test } from 'node:test';
import assert from 'node:assert/strict';
import { play as playTranslator } from './helpers/play-translator.ts';
import {
  anthropicErrorEvent,
  anthropicEvent,
  ChatToMessagesStream,
  UNSIGNED_THINKING_SIGNATURE,
} from '../src/bridges/anthropic/stream.ts';
import { SseSplitter } from '../src/wire/sse.ts';
import { createUsageTap } from '../src/wire/stream-usage.ts';
import { assertSameShape } from './fakes/shape.ts';
import {
  assertValidOrder,
  blocksOf,
  parseAnthropicSse,
  sdkFinalMessage,
  type AnthropicFrame,
} from './helpers/anthropic-events.ts';
import { readFixture } from './helpers/fixtures.ts';
import { prng } from './helpers/prng.ts';

const CHAT_TOOL_CALL = 'llm/openai/chat_completions_stream_tool_call_usage.sse.txt';
const CHAT_PARALLEL = 'llm/openai/chat_completions_stream_parallel_tool_calls_usage.sse.txt';
const ANTHROPIC_TOOL_USE = 'llm/anthropic/messages_stream_tool_use.sse.txt';
const ANTHROPIC_THINKING = 'llm/anthropic/messages_stream_thinking.sse.txt';

type Json = Record<string, any>;

function translator(opts: Partial<ConstructorParameters<typeof ChatToMessagesStream>[0]> = {}, clock = () => 0) {
  return new ChatToMessagesStream({ model: 'claude-sonnet-4-5', promptTokenEstimate: 30, now: clock, ...opts });
}

/** Chunk sizes for one pass over a body: fixed sizes, one whole piece, and seeded random cuts. */
function chunkings(length: number): { name: string; sizes: () => number }[] {
  const fixed = [1, 2, 7, 64, 1000].map((n) => ({ name: `${n}-byte chunks`, sizes: () => n }));
  const random = [1, 2, 3].map((seed) => {
    const next = prng(seed);
    return { name: `random chunks (seed ${seed})`, sizes: () => 1 + Math.floor(next() * 90) };
  });
  return [...fixed, { name: 'one chunk', sizes: () => length }, ...random];
}

/** Plays a relay through the translator (see helpers/play-translator.ts). */
const play = (
  input: string,
  sizes: () => number,
  opts: Partial<ConstructorParameters<typeof ChatToMessagesStream>[0]> = {},
) => playTranslator(input, sizes, (clock) => translator(opts, clock));

/** The chat chunks of an SSE body, `[DONE]` left out. */
function chatChunks(body: string): Json[] {
  return body
    .split('\n\n')
    .filter((b) => b.startsWith('data: ') && b !== 'data: [DONE]')
    .map((b) => JSON.parse(b.slice(6)));
}

/** Each tool call's name, id and arguments as the chat stream gave them, by call index. */
function chatToolCalls(body: string): { id: string; name: string; args: string }[] {
  const calls: { id: string; name: string; args: string }[] = [];
  for (const chunk of chatChunks(body)) {
    for (const call of chunk.choices[0]?.delta?.tool_calls ?? []) {
      calls[call.index] ??= { id: '', name: '', args: '' };
      if (call.id) calls[call.index].id = call.id;
      if (call.function?.name) calls[call.index].name = call.function.name;
      calls[call.index].args += call.function?.arguments ?? '';
    }
  }
  return calls;
}

/** The first frame of each kind in a real capture: events by type, blocks and deltas by their own type too. */
function shapesOf(frames: AnthropicFrame[]): Map<string, any> {
  const shapes = new Map<string, any>();
  for (const { event, data } of frames) {
    const key = shapeKey(event, data);
    if (!shapes.has(key)) shapes.set(key, data);
  }
  return shapes;
}

function shapeKey(event: string, data: any): string {
  if (event === 'content_block_start') return `${event}:${data.content_block.type}`;
  if (event === 'content_block_delta') return `${event}:${data.delta.type}`;
  return event;
}

for (const file of [CHAT_TOOL_CALL, CHAT_PARALLEL]) {
  test(`stream: ${file.split('/').pop()} becomes a valid Messages stream in any chunking`, async () => {
    const input = readFixture(file);
    const reference = shapesOf(parseAnthropicSse(readFixture(ANTHROPIC_TOOL_USE)));
    const calls = chatToolCalls(input);
    let first: string | undefined;
    for (const chunking of chunkings(input.length)) {
      const { output, t } = play(input, chunking.sizes);
      if (first === undefined) first = output;
      assert.equal(output, first, `the same output whatever the chunking (${chunking.name})`);
      assert.equal(t.ended, true);
    }
    const frames = parseAnthropicSse(first!);
    assertValidOrder(frames);
    for (const { event, data } of frames) {
      const want = reference.get(shapeKey(event, data));
      assert.ok(want, `the capture has a ${shapeKey(event, data)} to compare with`);
      assertSameShape(data, want, '$');
    }
    const blocks = blocksOf(frames);
    assert.equal(blocks.length, calls.length, 'one tool_use block per call');
    blocks.forEach((block, i) => {
      assert.equal(block.type, 'tool_use');
      assert.equal(block.start.name, calls[i].name);
      assert.equal(block.start.id, `toolu_${calls[i].id}`);
      assert.deepEqual(block.start.input, {});
      assert.equal(block.json, calls[i].args, 'the arguments reassemble exactly');
    });
    const argumentChunks = chatChunks(input).filter(
      (c) => c.choices[0]?.delta?.tool_calls?.[0]?.function?.arguments !== undefined,
    ).length;
    assert.equal(
      blocks.reduce((n, b) => n + b.deltas, 0),
      argumentChunks,
      'one input_json_delta per arguments fragment, none held back',
    );
    const usage = chatChunks(input).at(-1)!.usage;
    const messageDelta = frames.at(-2)!.data;
    assert.deepEqual(messageDelta.delta, { stop_reason: 'tool_use', stop_sequence: null });
    assert.deepEqual(messageDelta.usage, {
      input_tokens: usage.prompt_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: usage.completion_tokens,
    });
    assert.equal(frames[0].data.message.model, 'claude-sonnet-4-5', 'the model the client asked for');
    assert.equal(frames[0].data.message.id, `msg_${chatChunks(input)[0].id}`);

    const message = await sdkFinalMessage(first!);
    assert.equal(message.stop_reason, 'tool_use');
    assert.equal(message.usage.output_tokens, usage.completion_tokens);
    assert.equal(message.usage.input_tokens, usage.prompt_tokens);
    assert.deepEqual(
      message.content.map((b) => b.type),
      calls.map(() => 'tool_use'),
    );
    message.content.forEach((block, i) => {
      assert.equal(block.type, 'tool_use');
      if (block.type === 'tool_use') assert.deepEqual(block.input, JSON.parse(calls[i].args));
    });
  });

  test(`stream: ${file.split('/').pop()} summary matches the OpenAI tap's`, () => {
    const input = readFixture(file);
    const { t } = play(input, () => 13);
    let eventIndex = -1;
    const tap = createUsageTap({ clientWantsUsage: true, promptTokenEstimate: 30, now: () => eventIndex });
    const splitter = new SseSplitter();
    for (const ev of [...splitter.push(Buffer.from(input)), ...splitter.flush()]) {
      eventIndex += 1;
      tap.onEvent(ev);
    }
    assert.deepEqual(t.summary(), tap.summary());
    assert.equal(t.summary().usageSource, 'reported');
    assert.equal(t.summary().finishReason, 'tool_calls');
    assert.equal(t.summary().model, 'gpt-4o-2024-08-06');
    assert.equal(t.finishedWithoutMarker(), true);
    assert.equal(t.end(), null, '[DONE] already closed the message');
  });
}

/** A real Messages capture rebuilt as the chat stream a backend would have sent for the same answer. */
function chatStreamFrom(frames: AnthropicFrame[]): string {
  const chunk = (choice: Json | undefined, extra: Json = {}) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-rebuilt', object: 'chat.completion.chunk', created: 1, model: 'backend-model', choices: choice ? [{ index: 0, ...choice }] : [], ...extra })}\n\n`;
  const types: string[] = [];
  let callIndex = -1;
  let body = chunk({ delta: { role: 'assistant', content: null }, finish_reason: null });
  let finish = 'stop';
  let usage: Json = {};
  for (const { event, data } of frames) {
    if (event === 'content_block_start') {
      types[data.index] = data.content_block.type;
      if (data.content_block.type === 'tool_use') {
        callIndex += 1;
        body += chunk({
          delta: {
            tool_calls: [
              {
                index: callIndex,
                id: data.content_block.id,
                type: 'function',
                function: { name: data.content_block.name },
              },
            ],
          },
          finish_reason: null,
        });
      }
    } else if (event === 'content_block_delta') {
      const d = data.delta;
      if (d.type === 'thinking_delta') body += chunk({ delta: { reasoning_content: d.thinking }, finish_reason: null });
      else if (d.type === 'text_delta') body += chunk({ delta: { content: d.text }, finish_reason: null });
      else if (d.type === 'input_json_delta')
        body += chunk({
          delta: { tool_calls: [{ index: callIndex, function: { arguments: d.partial_json } }] },
          finish_reason: null,
        });
    } else if (event === 'message_delta') {
      finish =
        { end_turn: 'stop', tool_use: 'tool_calls', max_tokens: 'length' }[data.delta.stop_reason as string] ?? 'stop';
      usage = data.usage;
    }
  }
  body += chunk({ delta: {}, finish_reason: finish });
  const prompt = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
  body += chunk(undefined, {
    usage: {
      prompt_tokens: prompt,
      completion_tokens: usage.output_tokens,
      total_tokens: prompt + usage.output_tokens,
    },
  });
  return `${body}data: [DONE]\n\n`;
}

/** Event, block and delta types in order, without what only Anthropic sends (pings, signatures) or that carries nothing. */
function skeleton(frames: AnthropicFrame[]): string[] {
  const kinds: string[] = [];
  return frames.flatMap(({ event, data }) => {
    if (event === 'ping') return [];
    if (event === 'content_block_start') kinds[data.index] = data.content_block.type;
    if (event === 'content_block_delta') {
      const d = data.delta;
      if (d.type === 'signature_delta') return [];
      if ((d.type === 'thinking_delta' && d.thinking === '') || (d.type === 'text_delta' && d.text === '')) return [];
      return [`${event}:${kinds[data.index]}:${d.type}:${JSON.stringify(d.thinking ?? d.text ?? d.partial_json)}`];
    }
    return [`${event}${data.index !== undefined ? `:${kinds[data.index]}` : ''}`];
  });
}

for (const file of [ANTHROPIC_THINKING, ANTHROPIC_TOOL_USE]) {
  test(`stream: the answer of ${file.split('/').pop()}, sent as a chat stream, comes back as the same Messages stream`, async () => {
    const real = parseAnthropicSse(readFixture(file));
    const input = chatStreamFrom(real);
    const { output } = play(input, () => 11);
    const ours = parseAnthropicSse(output);
    assertValidOrder(ours);
    assert.deepEqual(skeleton(ours), skeleton(real), 'same events, blocks and fragments');
    const realBlocks = blocksOf(real);
    const ourBlocks = blocksOf(ours);
    assert.deepEqual(
      ourBlocks.map((b) => [b.type, b.text, b.thinking, b.json]),
      realBlocks.map((b) => [b.type, b.text, b.thinking, b.json]),
    );
    for (const block of ourBlocks.filter((b) => b.type === 'thinking')) {
      assert.deepEqual(
        block.signatures,
        [UNSIGNED_THINKING_SIGNATURE],
        'one signature_delta per thinking block, so that Claude Code keeps it',
      );
      assert.notEqual(block.signatures[0], '');
    }
    const realDelta = real.find((f) => f.event === 'message_delta')!.data;
    const ourDelta = ours.find((f) => f.event === 'message_delta')!.data;
    assert.deepEqual(ourDelta.delta, realDelta.delta);
    for (const key of ['input_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens', 'output_tokens'])
      assert.equal(ourDelta.usage[key], realDelta.usage[key], key);
    // every frame has the shape of the real one of its kind (fields only Anthropic has aside)
    const reference = shapesOf(real);
    const ignore = ['$.message.usage.inference_geo', '$.context_management'];
    for (const { event, data } of ours) assertSameShape(data, reference.get(shapeKey(event, data)), '$', { ignore });

    const message = await sdkFinalMessage(output);
    const realMessage = await sdkFinalMessage(readFixture(file));
    assert.deepEqual(
      message.content.map((b) => b.type),
      realMessage.content.map((b) => b.type),
    );
    assert.deepEqual(
      message.content.map((b) =>
        b.type === 'tool_use' ? b.input : b.type === 'text' ? b.text : b.type === 'thinking' ? b.thinking : null,
      ),
      realMessage.content.map((b) =>
        b.type === 'tool_use' ? b.input : b.type === 'text' ? b.text : b.type === 'thinking' ? b.thinking : null,
      ),
    );
    assert.equal(message.stop_reason, realMessage.stop_reason);
  });
}

test('anthropicEvent and anthropicErrorEvent frame one event each', () => {
  assert.equal(anthropicEvent('ping', { type: 'ping' }), 'event: ping\ndata: {"type":"ping"}\n\n');
  assert.equal(
    anthropicErrorEvent('overloaded_error', 'Overloaded'),
    'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
  );
});
