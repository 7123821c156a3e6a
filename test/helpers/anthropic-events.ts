/**
 * Reading Anthropic Messages streams in tests: a strict frame parser, a checker of the
 * protocol's order rules, the blocks the deltas add up to, and the official SDK's reading of a body.
 */
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { parseTypedSse, type TypedFrame } from './typed-sse.ts';

export type AnthropicFrame = TypedFrame;

/** Splits a body into `event: X\ndata: {…}\n\n` frames; anything else, or an event name unlike its payload's type, fails. */
export const parseAnthropicSse = parseTypedSse;

const DELTA_BLOCK: Record<string, string> = {
  text_delta: 'text',
  thinking_delta: 'thinking',
  signature_delta: 'thinking',
  input_json_delta: 'tool_use',
};

/**
 * The Messages protocol's order: message_start first; blocks one at a time with indexes 0, 1, …;
 * deltas only into the open block and of its kind; then message_delta, then message_stop, last.
 * `complete: false` accepts a stream that broke (ended with an error event, or cut short).
 */
export function assertValidOrder(frames: AnthropicFrame[], opts: { complete: boolean } = { complete: true }): void {
  assert.equal(frames[0]?.event, 'message_start', 'message_start comes first');
  let open: { index: number; type: string } | undefined;
  let next = 0;
  let sawDelta = false;
  frames.forEach((frame, i) => {
    const at = `frame ${i} (${frame.event})`;
    if (i > 0) assert.notEqual(frame.event, 'message_start', `${at}: one message_start`);
    if (frame.event !== 'ping' && frame.event !== 'error' && frame.event !== 'message_start')
      assert.ok(!sawDelta || frame.event === 'message_stop', `${at}: after message_delta only message_stop`);
    switch (frame.event) {
      case 'content_block_start':
        assert.equal(open, undefined, `${at}: the previous block was stopped`);
        assert.equal(frame.data.index, next, `${at}: indexes count up from 0`);
        open = { index: next, type: frame.data.content_block.type };
        next += 1;
        break;
      case 'content_block_delta':
        assert.ok(open, `${at}: a delta needs an open block`);
        assert.equal(frame.data.index, open.index, `${at}: into the open block`);
        assert.equal(
          DELTA_BLOCK[frame.data.delta.type],
          open.type,
          `${at}: a ${frame.data.delta.type} belongs in a ${DELTA_BLOCK[frame.data.delta.type]} block`,
        );
        break;
      case 'content_block_stop':
        assert.ok(open, `${at}: a stop needs an open block`);
        assert.equal(frame.data.index, open.index, `${at}: stops the open block`);
        open = undefined;
        break;
      case 'message_delta':
        assert.equal(open, undefined, `${at}: every block stopped before message_delta`);
        sawDelta = true;
        break;
      case 'message_stop':
        assert.ok(sawDelta, `${at}: message_stop follows message_delta`);
        assert.equal(i, frames.length - 1, `${at}: message_stop is last`);
        break;
      case 'error':
        assert.equal(i, frames.length - 1, `${at}: an error ends the stream`);
        break;
      case 'ping':
      case 'message_start':
        break;
      default:
        assert.fail(`${at}: unknown event`);
    }
  });
  if (opts.complete) assert.equal(frames.at(-1)?.event, 'message_stop', 'a complete stream ends with message_stop');
}

export interface Block {
  type: string;
  text: string;
  thinking: string;
  json: string;
  signatures: string[];
  start: any;
  deltas: number;
}

/** The content blocks the frames build, each with its fragments joined. */
export function blocksOf(frames: AnthropicFrame[]): Block[] {
  const blocks: Block[] = [];
  for (const { event, data } of frames) {
    if (event === 'content_block_start') {
      blocks[data.index] = {
        type: data.content_block.type,
        text: '',
        thinking: '',
        json: '',
        signatures: [],
        start: data.content_block,
        deltas: 0,
      };
    } else if (event === 'content_block_delta') {
      const block = blocks[data.index];
      block.deltas += 1;
      const d = data.delta;
      if (d.type === 'text_delta') block.text += d.text;
      else if (d.type === 'thinking_delta') block.thinking += d.thinking;
      else if (d.type === 'input_json_delta') block.json += d.partial_json;
      else if (d.type === 'signature_delta') block.signatures.push(d.signature);
    }
  }
  return blocks;
}

/** Parses a Messages SSE body with the official SDK's stream accumulator, as a client would (no network). */
export async function sdkFinalMessage(body: string): Promise<Anthropic.Message> {
  const client = new Anthropic({
    apiKey: 'test',
    baseURL: 'http://127.0.0.1:9',
    maxRetries: 0,
    fetch: async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } }),
  });
  const stream = client.messages.stream({
    model: 'local-model',
    max_tokens: 100,
    messages: [{ role: 'user', content: 'hi' }],
  });
  return stream.finalMessage();
}
