/**
 * A strict reader of typed SSE bodies (Anthropic Messages, the Responses API): every frame is
 * one `event: X` line and one single-line `data: {…}` whose `type` is X; anything else fails.
 */
import assert from 'node:assert/strict';

export interface TypedFrame {
  event: string;
  data: any;
}

export function parseTypedSse(body: string): TypedFrame[] {
  assert.ok(body === '' || body.endsWith('\n\n'), 'the body ends with a blank line');
  const frames: TypedFrame[] = [];
  for (const block of body.split('\n\n')) {
    if (block === '') continue;
    const match = /^event: ([a-z_.]+)\ndata: (.*)$/s.exec(block);
    assert.ok(match, `a frame is one event line and one data line: ${JSON.stringify(block)}`);
    assert.ok(!match[2].includes('\n'), 'the data is one line');
    const data = JSON.parse(match[2]);
    assert.equal(data.type, match[1], 'the event name is the payload type');
    frames.push({ event: match[1], data });
  }
  return frames;
}
