/**
 * Reading Responses API streams in tests: a strict frame parser, a checker of the protocol's
 * order and numbering rules, the items the deltas add up to, and the official SDK's reading of
 * a body (offline: its fetch answers with the bytes).
 */
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { accumulateResponse } from 'openai/lib/responses/ResponseAccumulator';
import type { Response as SdkResponse, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { parseTypedSse, type TypedFrame } from './typed-sse.ts';

export type ResponsesFrame = TypedFrame;

/** Splits a body into `event: X\ndata: {…}\n\n` frames; anything else, or an event name unlike its payload's type, fails. */
export const parseResponsesSse = parseTypedSse;

const FINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** Which item type each per-item event belongs to. */
const ITEM_EVENTS: Record<string, string> = {
  'response.content_part.added': 'message',
  'response.content_part.done': 'message',
  'response.output_text.delta': 'message',
  'response.output_text.done': 'message',
  'response.refusal.delta': 'message',
  'response.refusal.done': 'message',
  'response.function_call_arguments.delta': 'function_call',
  'response.function_call_arguments.done': 'function_call',
  'response.reasoning_summary_part.added': 'reasoning',
  'response.reasoning_summary_part.done': 'reasoning',
  'response.reasoning_summary_text.delta': 'reasoning',
  'response.reasoning_summary_text.done': 'reasoning',
};

/**
 * The protocol's rules: `response.created` then `response.in_progress` first; sequence numbers
 * 0, 1, 2, …; items one at a time with output indexes 0, 1, …; every per-item event names the open
 * item (`item_id`, `output_index`) and one of its open parts; one final event, last. `complete:
 * false` accepts a stream cut short (ending anywhere, or with `response.failed`).
 */
export function assertValidSequence(frames: ResponsesFrame[], opts: { complete: boolean } = { complete: true }): void {
  assert.equal(frames[0]?.event, 'response.created', 'response.created comes first');
  assert.equal(frames[1]?.event, 'response.in_progress', 'response.in_progress comes second');
  let open: { index: number; id: string; type: string; part?: number } | undefined;
  let next = 0;
  frames.forEach((frame, i) => {
    const at = `frame ${i} (${frame.event})`;
    const d = frame.data;
    assert.equal(d.sequence_number, i, `${at}: sequence numbers count up from 0 without a gap`);
    if (FINAL.has(frame.event)) {
      assert.equal(i, frames.length - 1, `${at}: the final event is last`);
      assert.equal(
        d.response.status,
        { 'response.completed': 'completed', 'response.incomplete': 'incomplete', 'response.failed': 'failed' }[
          frame.event
        ],
      );
      if (frame.event !== 'response.failed') assert.equal(open, undefined, `${at}: every item is done before the end`);
      assert.equal(d.response.output.length, next, `${at}: the final Response holds every item`);
      return;
    }
    if (frame.event === 'response.created' || frame.event === 'response.in_progress') {
      assert.ok(i < 2, `${at}: only at the start`);
      assert.equal(d.response.status, 'in_progress');
      assert.deepEqual(d.response.output, []);
      return;
    }
    if (frame.event === 'response.output_item.added') {
      assert.equal(open, undefined, `${at}: the previous item is done`);
      assert.equal(d.output_index, next, `${at}: output indexes count up from 0`);
      open = { index: next, id: d.item.id, type: d.item.type };
      next += 1;
      return;
    }
    assert.ok(open, `${at}: needs an open item`);
    if (frame.event === 'response.output_item.done') {
      assert.equal(d.output_index, open.index, `${at}: ends the open item`);
      assert.equal(d.item.id, open.id);
      assert.equal(open.part, undefined, `${at}: its parts are done`);
      open = undefined;
      return;
    }
    assert.equal(
      ITEM_EVENTS[frame.event],
      open.type,
      `${at}: belongs in a ${ITEM_EVENTS[frame.event] ?? '?'} item, the open one is ${open.type}`,
    );
    assert.equal(d.item_id, open.id, `${at}: names the open item`);
    assert.equal(d.output_index, open.index, `${at}: at the open item's index`);
    const partIndex = d.content_index ?? d.summary_index;
    if (frame.event.endsWith('part.added')) {
      assert.equal(open.part, undefined, `${at}: one part at a time`);
      open.part = partIndex;
    } else if (frame.event.endsWith('part.done')) {
      assert.equal(partIndex, open.part, `${at}: ends the open part`);
      open.part = undefined;
    } else if (partIndex !== undefined) {
      assert.equal(partIndex, open.part, `${at}: into the open part`);
    }
  });
  if (opts.complete)
    assert.ok(
      ['response.completed', 'response.incomplete'].includes(frames.at(-1)!.event),
      'a complete stream ends with completed or incomplete',
    );
}

export interface StreamedItem {
  type: string;
  added: any;
  done?: any;
  text: string;
  refusal: string;
  summary: string;
  args: string;
  deltas: number;
}

/** The items the frames build, each with its deltas joined. */
export function itemsOf(frames: ResponsesFrame[]): StreamedItem[] {
  const items: StreamedItem[] = [];
  for (const { event, data } of frames) {
    if (event === 'response.output_item.added') {
      items[data.output_index] = {
        type: data.item.type,
        added: data.item,
        text: '',
        refusal: '',
        summary: '',
        args: '',
        deltas: 0,
      };
      continue;
    }
    const item = items[data.output_index];
    if (event === 'response.output_item.done') item.done = data.item;
    else if (event === 'response.output_text.delta') {
      item.text += data.delta;
      item.deltas += 1;
    } else if (event === 'response.refusal.delta') {
      item.refusal += data.delta;
      item.deltas += 1;
    } else if (event === 'response.reasoning_summary_text.delta') {
      item.summary += data.delta;
      item.deltas += 1;
    } else if (event === 'response.function_call_arguments.delta') {
      item.args += data.delta;
      item.deltas += 1;
    }
  }
  return items;
}

/** The SDK's own accumulator over every event but the final one: the output the incremental events built. */
export function accumulatedOutput(frames: ResponsesFrame[]): unknown[] {
  let snapshot: SdkResponse | undefined;
  for (const { event, data } of frames) {
    if (FINAL.has(event)) break;
    snapshot = accumulateResponse(data as ResponseStreamEvent, snapshot);
  }
  return snapshot?.output ?? [];
}

/** Parses a Responses SSE body with the official SDK's stream helper, as a client would (no network). */
export async function sdkFinalResponse(body: string): Promise<SdkResponse> {
  const client = new OpenAI({
    apiKey: 'test',
    baseURL: 'http://127.0.0.1:9/v1',
    maxRetries: 0,
    fetch: async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } }),
  });
  const stream = client.responses.stream({ model: 'local-model', input: 'hi' });
  return stream.finalResponse();
}

/** Every event the SDK's stream helper hands a client, in order. */
export async function sdkEvents(body: string): Promise<ResponseStreamEvent[]> {
  const client = new OpenAI({
    apiKey: 'test',
    baseURL: 'http://127.0.0.1:9/v1',
    maxRetries: 0,
    fetch: async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } }),
  });
  const events: ResponseStreamEvent[] = [];
  const stream = await client.responses.create({ model: 'local-model', input: 'hi', stream: true });
  for await (const event of stream) events.push(event);
  return events;
}
