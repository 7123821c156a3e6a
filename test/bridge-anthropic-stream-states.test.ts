/**
 * The translator's state machine on synthetic chat streams: a break in each state, a finished
 * stream that lost its [DONE], and the edge cases of tool calls and reasoning.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { feed } from './helpers/play-translator.ts';
import {
  anthropicErrorEvent,
  ChatToMessagesStream,
  UNSIGNED_THINKING_SIGNATURE,
} from '../src/bridges/anthropic/stream.ts';
import { SseSplitter } from '../src/wire/sse.ts';
import {
  assertValidOrder,
  blocksOf,
  parseAnthropicSse,
  sdkFinalMessage,
  type AnthropicFrame,
} from './helpers/anthropic-events.ts';

type Json = Record<string, any>;

function translator(opts: Partial<ConstructorParameters<typeof ChatToMessagesStream>[0]> = {}, clock = () => 0) {
  return new ChatToMessagesStream({ model: 'claude-sonnet-4-5', promptTokenEstimate: 30, now: clock, ...opts });
}

function shapeKey(event: string, data: any): string {
  if (event === 'content_block_start') return `${event}:${data.content_block.type}`;
  if (event === 'content_block_delta') return `${event}:${data.delta.type}`;
  return event;
}

/** A stream that goes through every state: reasoning, text, a tool call, finish, usage, [DONE]. */
function fullChatStream(): string[] {
  const chunk = (choice: Json | undefined, extra: Json = {}) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-full', object: 'chat.completion.chunk', created: 1, model: 'qwen3', choices: choice ? [{ index: 0, ...choice }] : [], ...extra })}\n\n`;
  return [
    chunk({ delta: { role: 'assistant', content: null }, finish_reason: null }), // 0: before any block
    chunk({ delta: { reasoning_content: 'Let me' }, finish_reason: null }), // 1: thinking open
    chunk({ delta: { reasoning_content: ' think.' }, finish_reason: null }),
    chunk({ delta: { content: 'Calling' }, finish_reason: null }), // 3: text open
    chunk({ delta: { content: ' the tool.' }, finish_reason: null }),
    chunk({
      delta: {
        tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'weather', arguments: '' } }],
      },
      finish_reason: null,
    }), // 5: tool_use open
    chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }, finish_reason: null }),
    chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }, finish_reason: null }),
    chunk({ delta: {}, finish_reason: 'tool_calls' }), // 8: after finish
    chunk(undefined, {
      usage: {
        prompt_tokens: 120,
        completion_tokens: 9,
        total_tokens: 129,
        prompt_tokens_details: { cached_tokens: 100 },
      },
    }), // 9
    'data: [DONE]\n\n',
  ];
}

const BREAKS: { state: string; events: number; open?: string }[] = [
  { state: 'before any block', events: 1 },
  { state: 'thinking open', events: 2, open: 'thinking' },
  { state: 'text open', events: 4, open: 'text' },
  { state: 'tool_use open', events: 7, open: 'tool_use' },
  { state: 'after finish, before the usage chunk', events: 9 },
  { state: 'after finish and usage, before [DONE]', events: 10 },
];

for (const c of BREAKS) {
  test(`stream breaks (${c.state}): the open block is stopped and nothing claims a complete answer`, async () => {
    const t = translator();
    const head = feed(t, fullChatStream().slice(0, c.events));
    const openBefore = blocksOf(parseAnthropicSse(head)).length;
    const abort = t.abortFrames();
    const body = head + abort + anthropicErrorEvent('api_error', 'the backend broke the stream');
    const frames = parseAnthropicSse(body);
    assertValidOrder(frames, { complete: false });
    assert.equal(frames.at(-1)!.event, 'error');
    assert.ok(
      !frames.some((f) => f.event === 'message_delta' || f.event === 'message_stop'),
      'no message_delta, no message_stop',
    );
    if (c.open) {
      assert.deepEqual(parseAnthropicSse(abort), [
        { event: 'content_block_stop', data: { type: 'content_block_stop', index: openBefore - 1 } },
      ]);
      assert.equal(blocksOf(frames).at(-1)!.type, c.open);
    } else {
      assert.equal(abort, '', 'no block is open: nothing to close');
    }
    assert.equal(t.abortFrames(), '', 'a second call adds nothing');
    assert.equal(t.end(), null, 'a broken stream gets no closing events');
    assert.equal(t.onEvent({ raw: Buffer.alloc(0), data: '[DONE]' }), null, 'nothing after the break');
    await assert.rejects(
      sdkFinalMessage(body),
      (err: Error) => /the backend broke the stream/.test(err.message),
      'the SDK raises the error',
    );
  });
}

test('stream finished without [DONE]: end() gives exactly the closing events', async () => {
  for (const events of [10, 9]) {
    const t = translator();
    const head = feed(t, fullChatStream().slice(0, events));
    assert.equal(t.ended, false);
    assert.equal(t.finishedWithoutMarker(), true);
    const tail = t.end()!.toString('utf8');
    const closing = parseAnthropicSse(tail);
    assert.deepEqual(
      closing.map((f) => f.event),
      ['message_delta', 'message_stop'],
    );
    const usage =
      events === 10
        ? { input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 100, output_tokens: 9 }
        : { input_tokens: 30, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 7 }; // estimated: 7 content chunks
    assert.deepEqual(closing[0].data, {
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage,
    });
    assert.equal(t.end(), null, 'only once');
    assertValidOrder(parseAnthropicSse(head + tail));
    const message = await sdkFinalMessage(head + tail);
    assert.deepEqual(
      message.content.map((b) => b.type),
      ['thinking', 'text', 'tool_use'],
    );
    const [thinking, text, call] = message.content as any[];
    assert.deepEqual([thinking.thinking, thinking.signature], ['Let me think.', UNSIGNED_THINKING_SIGNATURE]);
    assert.equal(text.text, 'Calling the tool.');
    assert.deepEqual([call.id, call.name, call.input], ['toolu_call_1', 'weather', { city: 'Oslo' }]);
  }
});

test('stream: a complete run through every state, and its summary', () => {
  let clock = 100;
  const t = translator({}, () => clock++);
  const body = feed(t, fullChatStream());
  const frames = parseAnthropicSse(body);
  assertValidOrder(frames);
  assert.deepEqual(
    frames.map((f) => shapeKey(f.event, f.data)),
    [
      'message_start',
      'content_block_start:thinking',
      'content_block_delta:thinking_delta',
      'content_block_delta:thinking_delta',
      'content_block_delta:signature_delta',
      'content_block_stop',
      'content_block_start:text',
      'content_block_delta:text_delta',
      'content_block_delta:text_delta',
      'content_block_stop',
      'content_block_start:tool_use',
      'content_block_delta:input_json_delta',
      'content_block_delta:input_json_delta',
      'content_block_delta:input_json_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ],
  );
  assert.deepEqual(frames[0].data.message.usage, {
    input_tokens: 30,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    output_tokens: 1,
    service_tier: 'standard',
  });
  assert.deepEqual(t.summary(), {
    usage: { prompt_tokens: 120, completion_tokens: 9, total_tokens: 129, cached_tokens: 100 },
    usageSource: 'reported',
    firstTokenAt: 100,
    outputTokens: 9,
    contentChunks: 7,
    finishReason: 'tool_calls',
    model: 'qwen3',
    sawDone: true,
    usageSynthesised: false,
  });
  assert.equal(t.ended, true);
});

/** One-choice chat chunks, framed. */
function chunks(...deltas: (Json | [Json, Json])[]): string[] {
  return deltas.map((d) => {
    const [delta, choiceExtra] = Array.isArray(d) ? d : [d, {}];
    return `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta, finish_reason: null, ...choiceExtra }] })}\n\n`;
  });
}

const finish = (reason: string, extra: Json = {}): [Json, Json] => [{}, { finish_reason: reason, ...extra }];

interface EdgeCase {
  name: string;
  events: string[];
  opts?: Partial<ConstructorParameters<typeof ChatToMessagesStream>[0]>;
  check: (frames: AnthropicFrame[], t: ChatToMessagesStream) => void;
}

const EDGES: EdgeCase[] = [
  {
    name: 'parallel calls are consecutive blocks; a new index closes the previous call',
    events: chunks(
      { tool_calls: [{ index: 0, id: 'call_a', function: { name: 'a', arguments: '{"x":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '1}' } }] },
      { tool_calls: [{ index: 1, id: 'call_b', function: { name: 'b', arguments: '{}' } }] },
      finish('tool_calls'),
    ),
    check: (frames) =>
      assert.deepEqual(
        blocksOf(frames).map((b) => [b.start.id, b.start.name, b.json]),
        [
          ['toolu_call_a', 'a', '{"x":1}'],
          ['toolu_call_b', 'b', '{}'],
        ],
      ),
  },
  {
    name: 'a whole call in one chunk, and two calls in one chunk',
    events: chunks(
      {
        tool_calls: [
          { index: 0, id: 'c1', function: { name: 'a', arguments: '{"q":1}' } },
          { index: 1, id: 'c2', function: { name: 'b', arguments: '{"q":2}' } },
        ],
      },
      finish('tool_calls'),
    ),
    check: (frames) =>
      assert.deepEqual(
        blocksOf(frames).map((b) => [b.start.name, b.json]),
        [
          ['a', '{"q":1}'],
          ['b', '{"q":2}'],
        ],
      ),
  },
  {
    name: 'calls without an index: each new id is the next call',
    events: chunks(
      { tool_calls: [{ id: 'c1', function: { name: 'a', arguments: '{}' } }] },
      { tool_calls: [{ id: 'c2', function: { name: 'b', arguments: '{}' } }] },
      finish('tool_calls'),
    ),
    check: (frames) =>
      assert.deepEqual(
        blocksOf(frames).map((b) => b.start.name),
        ['a', 'b'],
      ),
  },
  {
    name: 'arguments before the name wait for it, then go out at once',
    events: chunks(
      { tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] },
      { tool_calls: [{ index: 0, id: 'late', function: { name: 'f', arguments: ':1}' } }] },
      finish('tool_calls'),
    ),
    check: (frames) => {
      const [block] = blocksOf(frames);
      assert.deepEqual([block.start.id, block.start.name, block.json], ['toolu_late', 'f', '{"a":1}']);
    },
  },
  {
    name: 'a call that never gets a name still gets a block at the finish',
    events: chunks({ tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] }, finish('tool_calls')),
    check: (frames) => {
      const [block] = blocksOf(frames);
      assert.equal(block.start.name, '');
      assert.match(block.start.id, /^toolu_/);
      assert.equal(block.json, '{"a":1}');
    },
  },
  {
    name: 'fragments of a call whose block was closed are dropped and counted',
    events: chunks(
      { tool_calls: [{ index: 0, id: 'c1', function: { name: 'a', arguments: '{' } }] },
      { tool_calls: [{ index: 1, id: 'c2', function: { name: 'b', arguments: '{}' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '}' } }] },
      finish('tool_calls'),
    ),
    check: (frames, t) => {
      assert.deepEqual(
        blocksOf(frames).map((b) => b.json),
        ['{', '{}'],
      );
      assert.equal(t.lateToolFragments, 1);
    },
  },
  {
    name: 'text after a tool call opens a new text block; reasoning and text in one chunk are two blocks',
    events: chunks(
      { reasoning_content: 'r', content: 't' },
      { tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{}' } }] },
      { content: 'after' },
      finish('stop'),
    ),
    check: (frames) => {
      assert.deepEqual(
        blocksOf(frames).map((b) => b.type),
        ['thinking', 'text', 'tool_use', 'text'],
      );
      assert.equal(
        frames.at(-2)!.data.delta.stop_reason,
        'tool_use',
        'an answer with tool calls is tool_use even when the backend said stop',
      );
    },
  },
  {
    name: 'reasoning sent as both reasoning_content and reasoning (newer vLLM) is not doubled; `reasoning` alone works',
    events: chunks({ reasoning_content: 'ab', reasoning: 'ab' }, { reasoning: 'cd' }, { content: 'x' }, finish('stop')),
    check: (frames) => assert.equal(blocksOf(frames)[0].thinking, 'abcd'),
  },
  {
    name: 'empty strings open no block',
    events: chunks({ role: 'assistant', content: '' }, { reasoning_content: '' }, { content: 'x' }, finish('stop')),
    check: (frames) =>
      assert.deepEqual(
        blocksOf(frames).map((b) => b.type),
        ['text'],
      ),
  },
  {
    name: 'a reported stop sequence (vLLM stop_reason) gives stop_sequence',
    events: chunks({ content: 'one two' }, finish('stop', { stop_reason: 'THREE' })),
    opts: { stopSequences: ['THREE'] },
    check: (frames) =>
      assert.deepEqual(frames.at(-2)!.data.delta, { stop_reason: 'stop_sequence', stop_sequence: 'THREE' }),
  },
  {
    name: 'length is max_tokens',
    events: chunks({ content: 'cut' }, finish('length')),
    check: (frames) => assert.equal(frames.at(-2)!.data.delta.stop_reason, 'max_tokens'),
  },
  {
    name: 'an empty answer is message_start, message_delta, message_stop',
    events: [],
    check: (frames) =>
      assert.deepEqual(
        frames.map((f) => f.event),
        ['message_start', 'message_delta', 'message_stop'],
      ),
  },
  {
    name: 'comments and garbage write nothing',
    events: [': keep-alive\n\n', 'data: {not json\n\n', ...chunks({ content: 'x' }), 'data: "a string"\n\n'],
    check: (frames) =>
      assert.deepEqual(
        frames.map((f) => f.event),
        [
          'message_start',
          'content_block_start',
          'content_block_delta',
          'content_block_stop',
          'message_delta',
          'message_stop',
        ],
      ),
  },
];

for (const c of EDGES) {
  test(`stream: ${c.name}`, () => {
    const t = translator(c.opts);
    const body = feed(t, [...c.events, 'data: [DONE]\n\n']);
    const frames = parseAnthropicSse(body);
    assertValidOrder(frames);
    c.check(frames, t);
  });
}

test('stream: each arguments fragment goes out with the chunk that brought it', () => {
  const t = translator();
  const events = chunks(
    { tool_calls: [{ index: 0, id: 'c1', function: { name: 'a', arguments: '' } }] },
    { tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] },
    { tool_calls: [{ index: 0, function: { arguments: '42}' } }] },
  );
  assert.match(feed(t, events.slice(0, 1)), /"content_block_start".*"name":"a"/s, 'the block starts with the name');
  assert.match(feed(t, events.slice(1, 2)), /"partial_json":"\{\\"x\\":"/);
  assert.match(feed(t, events.slice(2, 3)), /"partial_json":"42\}"/);
});

test('stream: an error the backend puts in the stream ends it, and is kept for the error event', () => {
  const t = translator();
  const head = feed(t, chunks({ content: 'partial' }));
  const error = 'data: {"error":{"message":"CUDA out of memory","code":503}}\n\n';
  assert.equal(feed(t, [error, ...chunks({ content: 'more' }), 'data: [DONE]\n\n']), '', 'nothing more is written');
  assert.deepEqual(t.upstreamError, {
    status: 503,
    error: { type: 'overloaded_error', message: 'CUDA out of memory' },
  });
  assert.equal(t.ended, false, 'not a normal end: the relay ends it as broken');
  assert.equal(t.finishedWithoutMarker(), false);
  assert.equal(t.end(), null);
  const body =
    head + t.abortFrames() + anthropicErrorEvent(t.upstreamError!.error.type, t.upstreamError!.error.message);
  assertValidOrder(parseAnthropicSse(body), { complete: false });
});

test('stream: an incomplete event is ignored, an unterminated [DONE] still ends the stream', () => {
  const t = translator();
  const splitter = new SseSplitter();
  const out: Buffer[] = [];
  for (const ev of [
    ...splitter.push(
      Buffer.from(chunks({ content: 'x' }, finish('stop')).join('') + 'data: {"choices":[{"delta":{"content":"half'),
    ),
    ...splitter.flush(),
  ]) {
    const bytes = t.onEvent(ev);
    if (bytes) out.push(bytes);
  }
  assert.ok(!Buffer.concat(out).toString().includes('half'));
  assert.equal(t.ended, false);
  const t2 = translator();
  const splitter2 = new SseSplitter();
  for (const ev of [
    ...splitter2.push(Buffer.from(chunks({ content: 'x' }, finish('stop')).join('') + 'data: [DONE]')),
    ...splitter2.flush(),
  ])
    t2.onEvent(ev);
  assert.equal(t2.ended, true);
});
