/**
 * The chat → Responses stream translator on real captures: chat streams from OpenAI become valid
 * Responses streams shaped like OpenAI's own, whatever the chunking; and the content of real
 * Responses streams, sent as the chat stream a backend would have written, comes back as the
 * same sequence of events.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { play as playTranslator } from './helpers/play-translator.ts';
import { ChatToResponsesStream, responsesEvent } from '../src/bridges/responses/stream.ts';
import { deltaFrame } from '../src/bridges/responses/stream-frames.ts';
import { SseSplitter } from '../src/wire/sse.ts';
import { createUsageTap } from '../src/wire/stream-usage.ts';
import { assertSameShape } from './fakes/shape.ts';
import { readFixture } from './helpers/fixtures.ts';
import { prng } from './helpers/prng.ts';
import {
  accumulatedOutput,
  assertValidSequence,
  itemsOf,
  parseResponsesSse,
  sdkEvents,
  sdkFinalResponse,
  type ResponsesFrame,
} from './helpers/responses-events.ts';

const CHAT_TOOL_CALL = 'llm/openai/chat_completions_stream_tool_call_usage.sse.txt';
const CHAT_PARALLEL = 'llm/openai/chat_completions_stream_parallel_tool_calls_usage.sse.txt';
const RESPONSES_TEXT = 'llm/openai/responses_stream_text.sse.txt';
const RESPONSES_CALL = 'llm/openai/responses_stream_function_call.sse.txt';

type Json = Record<string, any>;
type Options = ConstructorParameters<typeof ChatToResponsesStream>[0];

const CREATED = 1727346182;

function translator(opts: Partial<Options> = {}, clock = () => 0) {
  return new ChatToResponsesStream({
    id: 'resp_0123456789abcdef0123456789abcdef0123456789abcdef',
    createdAt: CREATED,
    model: 'gpt-4o',
    request: { model: 'gpt-4o', input: 'hi' },
    clock: () => CREATED + 2,
    now: clock,
    promptTokenEstimate: 30,
    ...opts,
  });
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
const play = (input: string, sizes: () => number, opts: Partial<Options> = {}) =>
  playTranslator(input, sizes, (clock) => translator(opts, clock));

/** The gateway's random item ids replaced by their order of appearance, to compare two runs. */
function withStableIds(body: string): string {
  const seen = new Map<string, string>();
  return body.replace(/\b(msg|fc|rs|call)_[0-9a-f]{48}\b/g, (id, prefix) => {
    if (!seen.has(id)) seen.set(id, `${prefix}_${seen.size}`);
    return seen.get(id)!;
  });
}

function chatChunks(body: string): Json[] {
  return body
    .split('\n\n')
    .filter((b) => b.startsWith('data: ') && b !== 'data: [DONE]')
    .map((b) => JSON.parse(b.slice(6)));
}

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

function shapeKey({ event, data }: ResponsesFrame): string {
  return data.item ? `${event}:${data.item.type}` : event;
}

/** The first event of each kind in the real captures, and the first output item of each type. */
function referenceShapes(): { events: Map<string, any>; items: Map<string, any> } {
  const events = new Map<string, any>();
  const items = new Map<string, any>();
  for (const file of [RESPONSES_TEXT, RESPONSES_CALL]) {
    for (const frame of parseResponsesSse(readFixture(file))) {
      if (!events.has(shapeKey(frame))) events.set(shapeKey(frame), frame.data);
      if (frame.event === 'response.output_item.done' && !items.has(frame.data.item.type))
        items.set(frame.data.item.type, frame.data.item);
    }
  }
  return { events, items };
}

/**
 * Fields the gateway cannot or need not match: OpenAI's obfuscation padding, the echo of the
 * client's tools (OpenAI's capture asked for others), a reasoning effort for a request that set
 * none (OpenAI's model says "none", a non-reasoning model null), and the output compared per item.
 */
const IGNORE = ['$.obfuscation', '$.response.tools', '$.response.reasoning.effort', '$.response.output'];

/** Every frame's payload has the shape of the real event of its kind, and every output item that of the real item of its type. */
function assertRealShapes(frames: ResponsesFrame[]): void {
  const reference = referenceShapes();
  for (const frame of frames) {
    const want = reference.events.get(shapeKey(frame));
    if (want) assertSameShape(frame.data, want, '$', { ignore: IGNORE });
    else
      assert.ok(
        /reasoning|refusal|incomplete|failed/.test(frame.event),
        `the captures have a ${shapeKey(frame)} to compare with`,
      );
    for (const item of frame.data.response?.output ?? [])
      assertSameShape(item, reference.items.get(item.type), '$item');
  }
}

for (const file of [CHAT_TOOL_CALL, CHAT_PARALLEL]) {
  test(`stream: ${file.split('/').pop()} becomes a valid Responses stream in any chunking`, async () => {
    const input = readFixture(file);
    const calls = chatToolCalls(input);
    let first: string | undefined;
    for (const chunking of chunkings(input.length)) {
      const { output, t } = play(input, chunking.sizes);
      first ??= output;
      assert.equal(
        withStableIds(output),
        withStableIds(first),
        `the same events whatever the chunking (${chunking.name})`,
      );
      assert.equal(t.ended, true);
    }
    const frames = parseResponsesSse(first!);
    assertValidSequence(frames);
    assertRealShapes(frames);

    const items = itemsOf(frames);
    assert.equal(items.length, calls.length, 'one function_call item per call');
    items.forEach((item, i) => {
      assert.equal(item.type, 'function_call');
      assert.deepEqual(
        { ...item.added, id: '' },
        {
          id: '',
          type: 'function_call',
          status: 'in_progress',
          arguments: '',
          call_id: calls[i].id,
          name: calls[i].name,
        },
      );
      assert.match(item.added.id, /^fc_[0-9a-f]{48}$/);
      assert.equal(item.args, calls[i].args, 'the arguments reassemble exactly from the deltas');
      assert.deepEqual(item.done, { ...item.added, status: 'completed', arguments: calls[i].args });
    });
    const argumentChunks = chatChunks(input).filter(
      (c) => (c.choices[0]?.delta?.tool_calls?.[0]?.function?.arguments ?? '') !== '',
    ).length;
    assert.equal(
      items.reduce((n, item) => n + item.deltas, 0),
      argumentChunks,
      'one delta per arguments fragment, none held back',
    );
    const argsDone = frames
      .filter((f) => f.event === 'response.function_call_arguments.done')
      .map((f) => [f.data.name, f.data.arguments]);
    assert.deepEqual(
      argsDone,
      calls.map((c) => [c.name, c.args]),
    );

    const usage = chatChunks(input).at(-1)!.usage;
    const completed = frames.at(-1)!.data.response;
    assert.equal(frames.at(-1)!.event, 'response.completed');
    assert.deepEqual(completed.usage, {
      input_tokens: usage.prompt_tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage.completion_tokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.total_tokens,
    });
    assert.equal(completed.model, 'gpt-4o', 'the model the client asked for');
    assert.equal(completed.completed_at, CREATED + 2);
    assert.deepEqual(
      completed.output,
      items.map((item) => item.done),
      'the final Response holds the items as they were done',
    );
    assert.deepEqual(
      accumulatedOutput(frames),
      completed.output,
      'the SDK accumulator builds the same output from the incremental events',
    );

    const response = await sdkFinalResponse(first!);
    assert.equal(response.status, 'completed');
    assert.equal(response.usage?.output_tokens, usage.completion_tokens);
    assert.deepEqual(
      response.output.map((o) => (o.type === 'function_call' ? [o.call_id, o.name, JSON.parse(o.arguments)] : o.type)),
      calls.map((c) => [c.id, c.name, JSON.parse(c.args)]),
    );
    const events = await sdkEvents(first!);
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      frames.map((_, i) => i),
      'the SDK sees every event, in sequence',
    );
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
    assert.equal(t.end(), null, '[DONE] already closed the response');
    assert.equal(t.failureFrames('late'), '', 'a completed stream cannot fail any more');
  });
}

/** A real Responses capture rebuilt as the chat stream a backend would have sent for the same answer. */
function chatStreamFrom(frames: ResponsesFrame[]): string {
  const chunk = (choice: Json | undefined, extra: Json = {}) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-rebuilt', object: 'chat.completion.chunk', created: 1, model: 'backend-model', choices: choice ? [{ index: 0, ...choice }] : [], ...extra })}\n\n`;
  let body = chunk({ delta: { role: 'assistant', content: '' }, finish_reason: null });
  let callIndex = -1;
  let usage: Json = {};
  let finish = 'stop';
  for (const { event, data } of frames) {
    if (event === 'response.output_item.added' && data.item.type === 'function_call') {
      callIndex += 1;
      finish = 'tool_calls';
      body += chunk({
        delta: {
          tool_calls: [
            {
              index: callIndex,
              id: data.item.call_id,
              type: 'function',
              function: { name: data.item.name, arguments: '' },
            },
          ],
        },
        finish_reason: null,
      });
    } else if (event === 'response.output_text.delta') {
      body += chunk({ delta: { content: data.delta }, finish_reason: null });
    } else if (event === 'response.reasoning_summary_text.delta') {
      body += chunk({ delta: { reasoning_content: data.delta }, finish_reason: null });
    } else if (event === 'response.function_call_arguments.delta') {
      body += chunk({
        delta: { tool_calls: [{ index: callIndex, function: { arguments: data.delta } }] },
        finish_reason: null,
      });
    } else if (event === 'response.completed' || event === 'response.incomplete') {
      usage = data.response.usage;
      if (event === 'response.incomplete') finish = 'length';
    }
  }
  body += chunk({ delta: {}, finish_reason: finish });
  body += chunk(undefined, {
    usage: {
      prompt_tokens: usage.input_tokens,
      completion_tokens: usage.output_tokens,
      total_tokens: usage.total_tokens,
      prompt_tokens_details: { cached_tokens: usage.input_tokens_details.cached_tokens },
      completion_tokens_details: { reasoning_tokens: usage.output_tokens_details.reasoning_tokens },
    },
  });
  return `${body}data: [DONE]\n\n`;
}

/** Event types in order, with each delta's fragment: what a client sees, ids aside. */
function skeleton(frames: ResponsesFrame[]): string[] {
  return frames.map(({ event, data }) =>
    data.delta !== undefined
      ? `${event}:${JSON.stringify(data.delta)}`
      : data.item
        ? `${event}:${data.item.type}`
        : event,
  );
}

for (const file of [RESPONSES_TEXT, RESPONSES_CALL]) {
  test(`stream: the answer of ${file.split('/').pop()}, sent as a chat stream, comes back as the same Responses stream`, async () => {
    const real = parseResponsesSse(readFixture(file));
    const { output } = play(chatStreamFrom(real), () => 11);
    const ours = parseResponsesSse(output);
    assertValidSequence(ours);
    assertValidSequence(real);
    assert.deepEqual(skeleton(ours), skeleton(real), 'the same events, in the same order, with the same fragments');
    assertRealShapes(ours);
    const strip = (item: Json) => ({ ...item, id: undefined });
    assert.deepEqual(
      itemsOf(ours).map((i) => strip(i.done)),
      itemsOf(real).map((i) => strip(i.done)),
      'the same items, ids aside',
    );
    const realFinal = real.at(-1)!.data.response;
    const ourFinal = ours.at(-1)!.data.response;
    assert.deepEqual(ourFinal.usage, realFinal.usage);
    assert.equal(ourFinal.status, realFinal.status);

    const sdkOurs = await sdkFinalResponse(output);
    const sdkReal = await sdkFinalResponse(readFixture(file));
    assert.equal(sdkOurs.output_text, sdkReal.output_text);
    assert.deepEqual(
      sdkOurs.output.map((o) => strip(o as Json)),
      sdkReal.output.map((o) => strip(o as Json)),
    );
  });
}

test('stream: delta frames are byte for byte what responsesEvent gives', () => {
  const id = 'msg_0123456789abcdef0123456789abcdef0123456789abcdef';
  const tricky = 'a "quoted" \\ line\nwith ünïcode \u2028 and </script>';
  assert.equal(
    deltaFrame('text', id, 2, 1, tricky, 7),
    responsesEvent('response.output_text.delta', {
      content_index: 1,
      delta: tricky,
      item_id: id,
      logprobs: [],
      output_index: 2,
      sequence_number: 7,
    }),
  );
  assert.equal(
    deltaFrame('refusal', id, 0, 0, tricky, 3),
    responsesEvent('response.refusal.delta', {
      content_index: 0,
      delta: tricky,
      item_id: id,
      output_index: 0,
      sequence_number: 3,
    }),
  );
  assert.equal(
    deltaFrame('arguments', id, 1, 0, tricky, 9),
    responsesEvent('response.function_call_arguments.delta', {
      delta: tricky,
      item_id: id,
      output_index: 1,
      sequence_number: 9,
    }),
  );
  assert.equal(
    deltaFrame('summary', id, 0, 0, tricky, 4),
    responsesEvent('response.reasoning_summary_text.delta', {
      delta: tricky,
      item_id: id,
      output_index: 0,
      sequence_number: 4,
      summary_index: 0,
    }),
  );
  assert.equal(
    responsesEvent('response.created', { sequence_number: 0 }),
    'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n',
  );
});
