/**
 * The chat → Responses stream translator's state machine on synthetic chat streams: a break in
 * each state, a finished stream that lost its [DONE], a length finish, an error inside the
 * stream, and the edge cases of tool calls, reasoning and refusals.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { feed } from './helpers/play-translator.ts';
import { ChatToResponsesStream } from '../src/bridges/responses/stream.ts';
import { SseSplitter } from '../src/wire/sse.ts';
import {
  accumulatedOutput,
  assertValidSequence,
  itemsOf,
  parseResponsesSse,
  sdkFinalResponse,
  type ResponsesFrame,
} from './helpers/responses-events.ts';

type Json = Record<string, any>;
type Options = ConstructorParameters<typeof ChatToResponsesStream>[0];

function translator(opts: Partial<Options> = {}, clock = () => 0) {
  return new ChatToResponsesStream({
    id: 'resp_fedcba9876543210fedcba9876543210fedcba9876543210',
    createdAt: 1700000000,
    model: 'qwen3',
    request: { model: 'qwen3', input: 'hi' },
    clock: () => 1700000005,
    now: clock,
    promptTokenEstimate: 30,
    ...opts,
  });
}

const chunk = (choice: Json | undefined, extra: Json = {}) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-full', object: 'chat.completion.chunk', created: 1, model: 'qwen3-backend', choices: choice ? [{ index: 0, ...choice }] : [], ...extra })}\n\n`;

/** A stream through every state: reasoning, text, a tool call, finish, usage, [DONE]. */
function fullChatStream(finish = 'tool_calls'): string[] {
  return [
    chunk({ delta: { role: 'assistant', content: null }, finish_reason: null }), // 0: no item yet
    chunk({ delta: { reasoning_content: 'Let me' }, finish_reason: null }), // 1: reasoning open
    chunk({ delta: { reasoning_content: ' think.' }, finish_reason: null }),
    chunk({ delta: { content: 'Calling' }, finish_reason: null }), // 3: text open
    chunk({ delta: { content: ' the tool.' }, finish_reason: null }),
    chunk({
      delta: {
        tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'weather', arguments: '' } }],
      },
      finish_reason: null,
    }), // 5: call open
    chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }, finish_reason: null }),
    chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }, finish_reason: null }),
    chunk({ delta: {}, finish_reason: finish }), // 8: finished
    chunk(undefined, {
      usage: {
        prompt_tokens: 120,
        completion_tokens: 9,
        total_tokens: 129,
        prompt_tokens_details: { cached_tokens: 100 },
        completion_tokens_details: { reasoning_tokens: 3 },
      },
    }), // 9
    'data: [DONE]\n\n',
  ];
}

const kinds = (frames: ResponsesFrame[]) =>
  frames.map((f) => (f.data.item ? `${f.event}:${f.data.item.type}` : f.event));

const BREAKS: { state: string; events: number; open?: string; items: number }[] = [
  { state: 'before anything', events: 0, items: 0 },
  { state: 'after the first chunk, before any item', events: 1, items: 0 },
  { state: 'reasoning open', events: 2, open: 'reasoning', items: 1 },
  { state: 'text open', events: 4, open: 'message', items: 2 },
  { state: 'function call open', events: 7, open: 'function_call', items: 3 },
  { state: 'after finish, before the usage chunk', events: 9, items: 3 },
  { state: 'after finish and usage, before [DONE]', events: 10, items: 3 },
];

for (const c of BREAKS) {
  test(`stream breaks (${c.state}): response.failed in sequence with the output so far, never response.completed`, async () => {
    const t = translator();
    const head = feed(t, fullChatStream().slice(0, c.events));
    const headFrames = head === '' ? [] : parseResponsesSse(head);
    const failure = t.failureFrames('the backend broke the stream');
    const frames = parseResponsesSse(head + failure);
    assertValidSequence(frames, { complete: false });
    const last = frames.at(-1)!;
    assert.equal(last.event, 'response.failed');
    assert.equal(
      last.data.sequence_number,
      headFrames.length + (c.events === 0 ? 2 : 0),
      'the numbering goes on where the stream stopped',
    );
    assert.ok(!frames.some((f) => f.event === 'response.completed' || f.event === 'response.incomplete'));
    const failed = last.data.response;
    assert.equal(failed.status, 'failed');
    assert.deepEqual(failed.error, { code: 'server_error', message: 'the backend broke the stream' });
    assert.equal(failed.completed_at, null);
    assert.equal(failed.output.length, c.items);
    if (c.open) {
      const open = failed.output.at(-1);
      assert.equal(open.type, c.open);
      if (c.open !== 'reasoning') assert.equal(open.status, 'in_progress', 'the item that was open is left as it was');
      assert.ok(
        !frames.some(
          (f) => f.event === 'response.output_item.done' && f.data.output_index === failed.output.length - 1,
        ),
        'and never done',
      );
    }
    assert.deepEqual(
      accumulatedOutput(frames),
      failed.output,
      'what the events built is what the failed Response holds',
    );
    if (c.events === 0)
      assert.deepEqual(
        kinds(frames),
        ['response.created', 'response.in_progress', 'response.failed'],
        'the SDKs need a Response to fail',
      );
    // usage only when the backend counted it (the usage chunk is event 9)
    assert.equal(failed.usage?.input_tokens ?? null, c.events === 10 ? 120 : null);

    assert.equal(t.failureFrames('again'), '', 'a second call adds nothing');
    assert.equal(t.end(), null, 'a broken stream gets no closing events');
    assert.equal(t.onEvent({ raw: Buffer.alloc(0), data: '[DONE]' }), null, 'nothing after the break');
    assert.deepEqual(t.finalResponse(), failed, 'the store keeps what the client saw');
    const sdk = await sdkFinalResponse(head + failure);
    assert.equal(sdk.status, 'failed');
    assert.equal(sdk.error?.message, 'the backend broke the stream');
  });
}

test('stream finished without [DONE]: end() gives exactly the closing event', async () => {
  for (const events of [10, 9]) {
    const t = translator();
    const head = feed(t, fullChatStream().slice(0, events));
    assert.equal(t.ended, false);
    assert.equal(t.finishedWithoutMarker(), true);
    const tail = parseResponsesSse(t.end()!.toString('utf8'));
    assert.deepEqual(kinds(tail), ['response.completed']);
    const usage =
      events === 10
        ? {
            input_tokens: 120,
            input_tokens_details: { cached_tokens: 100 },
            output_tokens: 9,
            output_tokens_details: { reasoning_tokens: 3 },
            total_tokens: 129,
          }
        : {
            input_tokens: 30,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 7,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: 37,
          }; // estimated: 7 content chunks
    assert.deepEqual(tail[0].data.response.usage, usage);
    assert.equal(t.end(), null, 'only once');
    assert.equal(t.failureFrames('late'), '', 'a completed stream cannot fail any more');
    const body = head + `event: response.completed\ndata: ${JSON.stringify(tail[0].data)}\n\n`;
    assertValidSequence(parseResponsesSse(body));
    const sdk = await sdkFinalResponse(body);
    assert.deepEqual(
      sdk.output.map((o) => o.type),
      ['reasoning', 'message', 'function_call'],
    );
    assert.equal(sdk.output_text, 'Calling the tool.');
  }
});

test('stream: a complete run through every state, its Response and its summary', () => {
  let clock = 100;
  const t = translator({}, () => clock++);
  const frames = parseResponsesSse(feed(t, fullChatStream()));
  assertValidSequence(frames);
  assert.deepEqual(kinds(frames), [
    'response.created',
    'response.in_progress',
    'response.output_item.added:reasoning',
    'response.reasoning_summary_part.added',
    'response.reasoning_summary_text.delta',
    'response.reasoning_summary_text.delta',
    'response.reasoning_summary_text.done',
    'response.reasoning_summary_part.done',
    'response.output_item.done:reasoning',
    'response.output_item.added:message',
    'response.content_part.added',
    'response.output_text.delta',
    'response.output_text.delta',
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done:message',
    'response.output_item.added:function_call',
    'response.function_call_arguments.delta',
    'response.function_call_arguments.delta',
    'response.function_call_arguments.done',
    'response.output_item.done:function_call',
    'response.completed',
  ]);
  const response = frames.at(-1)!.data.response;
  assert.deepEqual(
    response.output.map((o: Json) => ({ ...o, id: o.id.slice(0, 3) })),
    [
      { id: 'rs_', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Let me think.' }] },
      {
        id: 'msg',
        type: 'message',
        status: 'completed',
        content: [{ type: 'output_text', annotations: [], logprobs: [], text: 'Calling the tool.' }],
        role: 'assistant',
      },
      {
        id: 'fc_',
        type: 'function_call',
        status: 'completed',
        arguments: '{"city":"Oslo"}',
        call_id: 'call_1',
        name: 'weather',
      },
    ],
  );
  assert.deepEqual(
    [response.status, response.completed_at, response.incomplete_details, response.error],
    ['completed', 1700000005, null, null],
  );
  assert.deepEqual(t.finalResponse(), response);
  assert.deepEqual(t.summary(), {
    usage: { prompt_tokens: 120, completion_tokens: 9, total_tokens: 129, cached_tokens: 100 },
    usageSource: 'reported',
    firstTokenAt: 100,
    outputTokens: 9,
    contentChunks: 7,
    finishReason: 'tool_calls',
    model: 'qwen3-backend',
    sawDone: true,
    usageSynthesised: false,
  });
  assert.equal(t.ended, true);
});

for (const [finish, reason] of [
  ['length', 'max_output_tokens'],
  ['content_filter', 'content_filter'],
]) {
  test(`stream: a ${finish} finish is response.incomplete (${reason}), the item it cut incomplete`, async () => {
    const t = translator();
    const events = fullChatStream(finish);
    const body = feed(t, [...events.slice(0, 5), ...events.slice(8)]);
    const frames = parseResponsesSse(body);
    assertValidSequence(frames);
    const last = frames.at(-1)!;
    assert.equal(last.event, 'response.incomplete');
    assert.deepEqual([last.data.response.status, last.data.response.incomplete_details], ['incomplete', { reason }]);
    assert.deepEqual(
      last.data.response.output.map((o: Json) => o.status),
      [undefined, 'incomplete'],
    );
    assert.equal(last.data.response.completed_at, null);
    const sdk = await sdkFinalResponse(body);
    assert.equal(sdk.status, 'incomplete');
    assert.equal(sdk.incomplete_details?.reason, reason);
  });
}

test('stream: an error the backend puts in the stream ends it; failureFrames reports it as response.failed', async () => {
  const t = translator();
  const head = feed(t, [chunk({ delta: { content: 'partial' }, finish_reason: null })]);
  const error = 'data: {"error":{"message":"CUDA out of memory","code":503}}\n\n';
  assert.equal(
    feed(t, [error, chunk({ delta: { content: 'more' }, finish_reason: null }), 'data: [DONE]\n\n']),
    '',
    'nothing more is written',
  );
  assert.deepEqual(t.inBandError(), { detail: 'CUDA out of memory', delivered: false });
  assert.equal(t.ended, false, 'not a normal end: the relay ends it as broken');
  assert.equal(t.finishedWithoutMarker(), false);
  assert.equal(t.end(), null);
  assert.equal(
    t.finalResponse().status,
    'failed',
    'the store sees a failed response even before the last event is written',
  );
  const body = head + t.failureFrames(t.inBandError()!.detail);
  const frames = parseResponsesSse(body);
  assertValidSequence(frames, { complete: false });
  assert.deepEqual(frames.at(-1)!.data.response.error, { code: 'server_error', message: 'CUDA out of memory' });
  assert.equal((await sdkFinalResponse(body)).output_text, 'partial');

  const limited = translator();
  feed(limited, ['data: {"error":{"message":"slow down","code":429}}\n\n']);
  const lf = parseResponsesSse(limited.failureFrames('slow down'));
  assert.deepEqual(kinds(lf), ['response.created', 'response.in_progress', 'response.failed']);
  assert.equal(lf[2].data.response.error.code, 'rate_limit_exceeded');
  assert.equal(
    parseResponsesSse(translator().failureFrames('x', 'server_error')).at(-1)!.data.response.error.code,
    'server_error',
  );
});

/** One-choice chat chunks, framed. */
function chunks(...deltas: (Json | [Json, Json])[]): string[] {
  return deltas.map((d) => {
    const [delta, choiceExtra] = Array.isArray(d) ? d : [d, {}];
    return chunk({ delta, finish_reason: null, ...choiceExtra });
  });
}

const finishWith = (reason: string): [Json, Json] => [{}, { finish_reason: reason }];
const calls = (frames: ResponsesFrame[]) =>
  itemsOf(frames)
    .filter((i) => i.type === 'function_call')
    .map((i) => [i.done.call_id, i.done.name, i.args, i.done.arguments]);

interface EdgeCase {
  name: string;
  events: string[];
  opts?: Partial<Options>;
  check: (frames: ResponsesFrame[], t: ChatToResponsesStream) => void;
}

const EDGES: EdgeCase[] = [
  {
    name: 'parallel calls are consecutive items; a new index closes the previous call',
    events: chunks(
      { tool_calls: [{ index: 0, id: 'call_a', function: { name: 'a', arguments: '{"x":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '1}' } }] },
      { tool_calls: [{ index: 1, id: 'call_b', function: { name: 'b', arguments: '{}' } }] },
      finishWith('tool_calls'),
    ),
    check: (frames) =>
      assert.deepEqual(calls(frames), [
        ['call_a', 'a', '{"x":1}', '{"x":1}'],
        ['call_b', 'b', '{}', '{}'],
      ]),
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
      finishWith('tool_calls'),
    ),
    check: (frames) =>
      assert.deepEqual(calls(frames), [
        ['c1', 'a', '{"q":1}', '{"q":1}'],
        ['c2', 'b', '{"q":2}', '{"q":2}'],
      ]),
  },
  {
    name: 'calls without an index: each new id is the next call',
    events: chunks(
      { tool_calls: [{ id: 'c1', function: { name: 'a', arguments: '{}' } }] },
      { tool_calls: [{ id: 'c2', function: { name: 'b', arguments: '{}' } }] },
      finishWith('tool_calls'),
    ),
    check: (frames) =>
      assert.deepEqual(
        calls(frames).map((c) => c[1]),
        ['a', 'b'],
      ),
  },
  {
    name: 'arguments before the name wait for it, then go out at once',
    events: chunks(
      { tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] },
      { tool_calls: [{ index: 0, id: 'late', function: { name: 'f', arguments: ':1}' } }] },
      finishWith('tool_calls'),
    ),
    check: (frames) => assert.deepEqual(calls(frames), [['late', 'f', '{"a":1}', '{"a":1}']]),
  },
  {
    name: 'a call that never gets a name or an id still gets an item at the finish',
    events: chunks({ tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] }, finishWith('tool_calls')),
    check: (frames) => {
      const [call] = calls(frames);
      assert.match(call[0], /^call_[0-9a-f]{48}$/);
      assert.deepEqual(call.slice(1), ['', '{"a":1}', '{"a":1}']);
    },
  },
  {
    name: 'a call without arguments gets {} (as a delta too, so the deltas add up to the arguments)',
    events: chunks(
      { tool_calls: [{ index: 0, id: 'c', function: { name: 'now', arguments: '' } }] },
      finishWith('tool_calls'),
    ),
    check: (frames) => assert.deepEqual(calls(frames), [['c', 'now', '{}', '{}']]),
  },
  {
    name: 'fragments of a call whose item was closed are dropped and counted',
    events: chunks(
      { tool_calls: [{ index: 0, id: 'c1', function: { name: 'a', arguments: '{' } }] },
      { tool_calls: [{ index: 1, id: 'c2', function: { name: 'b', arguments: '{}' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '}' } }] },
      finishWith('tool_calls'),
    ),
    check: (frames, t) => {
      assert.deepEqual(
        calls(frames).map((c) => c[2]),
        ['{', '{}'],
      );
      assert.equal(t.lateToolFragments, 1);
    },
  },
  {
    name: 'text after a tool call opens a new message item; reasoning and text in one chunk are two items',
    events: chunks(
      { reasoning_content: 'r', content: 't' },
      { tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{}' } }] },
      { content: 'after' },
      finishWith('stop'),
    ),
    check: (frames) =>
      assert.deepEqual(
        itemsOf(frames).map((i) => [i.type, i.summary || i.text || i.args]),
        [
          ['reasoning', 'r'],
          ['message', 't'],
          ['function_call', '{}'],
          ['message', 'after'],
        ],
      ),
  },
  {
    name: 'reasoning sent as both reasoning_content and reasoning (newer vLLM) is not doubled; `reasoning` alone works',
    events: chunks(
      { reasoning_content: 'ab', reasoning: 'ab' },
      { reasoning: 'cd' },
      { content: 'x' },
      finishWith('stop'),
    ),
    check: (frames) => assert.equal(itemsOf(frames)[0].summary, 'abcd'),
  },
  {
    name: 'a refusal is a refusal part of the message, after its text',
    events: chunks({ content: 'Well, ' }, { refusal: 'I cannot' }, { refusal: ' help.' }, finishWith('stop')),
    check: (frames) => {
      const [message] = itemsOf(frames);
      assert.deepEqual(message.done.content, [
        { type: 'output_text', annotations: [], logprobs: [], text: 'Well, ' },
        { type: 'refusal', refusal: 'I cannot help.' },
      ]);
      assert.equal(message.refusal, 'I cannot help.');
      assert.deepEqual(
        frames.filter((f) => f.event.startsWith('response.refusal')).map((f) => [f.event, f.data.content_index]),
        [
          ['response.refusal.delta', 1],
          ['response.refusal.delta', 1],
          ['response.refusal.done', 1],
        ],
      );
    },
  },
  {
    name: 'empty strings open no item',
    events: chunks({ role: 'assistant', content: '' }, { reasoning_content: '' }, { content: 'x' }, finishWith('stop')),
    check: (frames) =>
      assert.deepEqual(
        itemsOf(frames).map((i) => i.type),
        ['message'],
      ),
  },
  {
    name: 'an empty answer is created, in_progress, completed',
    events: [],
    check: (frames) =>
      assert.deepEqual(kinds(frames), ['response.created', 'response.in_progress', 'response.completed']),
  },
  {
    name: 'comments and garbage write nothing',
    events: [': keep-alive\n\n', 'data: {not json\n\n', ...chunks({ content: 'x' }), 'data: "a string"\n\n'],
    check: (frames) =>
      assert.deepEqual(
        itemsOf(frames).map((i) => [i.type, i.text]),
        [['message', 'x']],
      ),
  },
  {
    name: 'the Response echoes the request: instructions, tools, sampling, text format, metadata, store',
    events: chunks({ content: 'x' }),
    opts: {
      request: {
        model: 'qwen3',
        input: 'hi',
        instructions: 'Be brief.',
        temperature: 0.2,
        top_p: 0.9,
        max_output_tokens: 50,
        store: true,
        tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }],
        tool_choice: 'required',
        parallel_tool_calls: false,
        text: { format: { type: 'json_object' } },
        metadata: { run: '7' },
        previous_response_id: 'resp_prev',
        reasoning: { effort: 'low' },
        user: 'u1',
      },
    },
    check: (frames) => {
      for (const f of [frames[0], frames.at(-1)!]) {
        const r = f.data.response;
        assert.deepEqual(
          [
            r.instructions,
            r.temperature,
            r.top_p,
            r.max_output_tokens,
            r.store,
            r.tool_choice,
            r.parallel_tool_calls,
            r.text,
            r.metadata,
            r.previous_response_id,
            r.reasoning,
            r.user,
          ],
          [
            'Be brief.',
            0.2,
            0.9,
            50,
            true,
            'required',
            false,
            { format: { type: 'json_object' }, verbosity: 'medium' },
            { run: '7' },
            'resp_prev',
            { effort: 'low', summary: null },
            'u1',
          ],
        );
        assert.deepEqual(r.tools, [
          { type: 'function', description: null, name: 'f', parameters: { type: 'object' }, strict: null },
        ]);
      }
    },
  },
];

for (const c of EDGES) {
  test(`stream: ${c.name}`, () => {
    const t = translator(c.opts);
    const frames = parseResponsesSse(feed(t, [...c.events, 'data: [DONE]\n\n']));
    assertValidSequence(frames);
    assert.deepEqual(accumulatedOutput(frames), frames.at(-1)!.data.response.output);
    c.check(frames, t);
  });
}

test('stream: each fragment goes out with the chunk that brought it; finalResponse() mid-stream is in_progress', () => {
  const t = translator();
  const events = chunks(
    { tool_calls: [{ index: 0, id: 'c1', function: { name: 'a', arguments: '' } }] },
    { tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] },
    { tool_calls: [{ index: 0, function: { arguments: '42}' } }] },
  );
  assert.match(
    feed(t, events.slice(0, 1)),
    /"response.output_item.added".*"name":"a"/s,
    'the item starts with the name',
  );
  assert.match(feed(t, events.slice(1, 2)), /"delta":"\{\\"x\\":"/);
  assert.match(feed(t, events.slice(2, 3)), /"delta":"42\}"/);
  const now = t.finalResponse();
  assert.equal(now.status, 'in_progress');
  assert.deepEqual(
    (now.output as Json[]).map((o) => [o.status, o.arguments]),
    [['in_progress', '{"x":42}']],
  );
  (now.output as Json[])[0].arguments = 'changed';
  assert.equal(
    (t.finalResponse().output as Json[])[0].arguments,
    '{"x":42}',
    'a copy: the store cannot change the stream',
  );
});

test('stream: an incomplete event is ignored, an unterminated [DONE] still ends the stream', () => {
  const t = translator();
  const splitter = new SseSplitter();
  const out: Buffer[] = [];
  for (const ev of [
    ...splitter.push(
      Buffer.from(
        chunks({ content: 'x' }, finishWith('stop')).join('') + 'data: {"choices":[{"delta":{"content":"half',
      ),
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
    ...splitter2.push(Buffer.from(chunks({ content: 'x' }, finishWith('stop')).join('') + 'data: [DONE]')),
    ...splitter2.flush(),
  ])
    t2.onEvent(ev);
  assert.equal(t2.ended, true);
  assert.equal(t2.finalResponse().status, 'completed');
});
