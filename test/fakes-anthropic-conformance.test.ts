/**
 * The Anthropic fake against the real captures in test/fixtures/llm/anthropic: every event
 * kind a capture has, the fake emits with the same JSON shape, in the same order rules, framed
 * the same way. The order rules are checked on the captures too, so they are the real API's.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ANTHROPIC_FAKE_API_KEY,
  assertSameShape,
  parseAnthropicSse,
  startAnthropicFake,
  type AnthropicKnobs,
  type AnthropicSseEvent,
} from './fakes/index.ts';
import { readFixture } from './helpers/fixtures.ts';

const THINKING = 'llm/anthropic/messages_stream_thinking.sse.txt';
const TOOL_USE = 'llm/anthropic/messages_stream_tool_use.sse.txt';

/** Events of one kind share a shape: the type, refined by the block or delta type. */
function kindOf(e: AnthropicSseEvent): string {
  if (e.data.type === 'content_block_start') return `content_block_start/${e.data.content_block?.type}`;
  if (e.data.type === 'content_block_delta') return `content_block_delta/${e.data.delta?.type}`;
  return e.data.type;
}

/** Which delta types each block type may carry. */
const DELTAS_OF: Record<string, string[]> = {
  text: ['text_delta'],
  thinking: ['thinking_delta', 'signature_delta'],
  tool_use: ['input_json_delta'],
};

/** The order rules of a Messages stream; throws naming the first event that breaks one. */
function assertOrderRules(events: AnthropicSseEvent[], label: string): void {
  assert.ok(events.length >= 2, `${label}: too few events`);
  assert.equal(events[0]!.data.type, 'message_start', `${label}: message_start first`);
  assert.equal(events.at(-1)!.data.type, 'message_stop', `${label}: message_stop last`);
  assert.equal(events.at(-2)!.data.type, 'message_delta', `${label}: message_delta just before message_stop`);
  assert.equal(events.filter((e) => e.data.type === 'message_start').length, 1, `${label}: one message_start`);
  assert.equal(events.filter((e) => e.data.type === 'message_delta').length, 1, `${label}: one message_delta`);
  let open: { index: number; type: string; deltas: AnthropicSseEvent[] } | undefined;
  let nextIndex = 0;
  events.forEach((e, i) => {
    const at = `${label} event ${i} (${kindOf(e)})`;
    assert.equal(e.event, e.data.type, `${at}: the event: line names data.type`);
    switch (e.data.type) {
      case 'content_block_start':
        assert.equal(open, undefined, `${at}: a block starts while block ${open?.index} is open`);
        assert.equal(e.data.index, nextIndex, `${at}: blocks start at 0 and count up`);
        open = { index: e.data.index, type: e.data.content_block.type, deltas: [] };
        nextIndex++;
        break;
      case 'content_block_delta':
        assert.ok(open, `${at}: a delta outside a block`);
        assert.equal(e.data.index, open.index, `${at}: the delta's index is the open block's`);
        assert.ok(
          DELTAS_OF[open.type]?.includes(e.data.delta.type),
          `${at}: ${e.data.delta.type} in a ${open.type} block`,
        );
        open.deltas.push(e);
        break;
      case 'content_block_stop':
        assert.ok(open, `${at}: a stop outside a block`);
        assert.equal(e.data.index, open.index, `${at}: stop closes the open block`);
        if (open.type === 'tool_use')
          assert.equal(open.deltas[0]?.data.delta.partial_json, '', `${at}: tool input opens with partial_json ""`);
        if (open.type === 'thinking')
          assert.equal(
            open.deltas.at(-1)?.data.delta.type,
            'signature_delta',
            `${at}: thinking ends with its signature`,
          );
        open = undefined;
        break;
      case 'message_delta':
        assert.equal(open, undefined, `${at}: message_delta while a block is open`);
        break;
      case 'ping':
        assert.ok(i > 0, `${at}: ping before message_start`);
        break;
      case 'message_start':
      case 'message_stop':
        break;
      default:
        assert.fail(`${at}: unknown event type`);
    }
  });
}

/** The fake's stream for `body` with `knobs`, read as Anthropic SSE. */
async function fakeStream(
  knobs: Partial<AnthropicKnobs>,
  body: Record<string, unknown>,
): Promise<{ raw: string; events: AnthropicSseEvent[]; message: any }> {
  const fake = await startAnthropicFake({ knobs });
  try {
    const post = (extra: Record<string, unknown>) =>
      fetch(`${fake.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': ANTHROPIC_FAKE_API_KEY,
          'anthropic-version': '2023-06-01',
        },
        body: JSON.stringify({ model: fake.models[0], max_tokens: 4096, ...body, ...extra }),
      });
    const res = await post({ stream: true });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    assert.match(res.headers.get('request-id') ?? '', /^req_01/);
    const raw = await res.text();
    const parsed = parseAnthropicSse(raw);
    assert.deepEqual(parsed.strayLines, [], 'every event is one event: line and one data: line');
    assert.ok(parsed.endsWithBlankLine);
    const message = await (await post({ stream: false })).json();
    return { raw, events: parsed.events, message };
  } finally {
    await fake.close();
  }
}

/** Every kind of event in the capture, the fake has too, each fake event shaped like the capture's first of its kind. */
function assertSameKindsAndShapes(fake: AnthropicSseEvent[], real: AnthropicSseEvent[]): void {
  const realByKind = new Map<string, AnthropicSseEvent>();
  for (const e of real) if (!realByKind.has(kindOf(e))) realByKind.set(kindOf(e), e);
  const fakeKinds = new Set(fake.map(kindOf));
  for (const kind of realByKind.keys()) assert.ok(fakeKinds.has(kind), `the fake never sends ${kind}`);
  for (const e of fake) {
    const r = realByKind.get(kindOf(e));
    if (r) assertSameShape(e.data, r.data, `$<${kindOf(e)}>`);
  }
}

/** message_start's message has these null (not yet known); a finished Message has them set. */
const SET_WHEN_DONE = ['$.stop_reason'];

const TOOLS = [{ name: 'json', description: 'Respond with JSON.', input_schema: { type: 'object' } }];

describe('Anthropic captures read strictly and follow the order rules', () => {
  for (const file of [THINKING, TOOL_USE]) {
    test(file, () => {
      const parsed = parseAnthropicSse(readFixture(file));
      assert.deepEqual(parsed.strayLines, []);
      assertOrderRules(parsed.events, file);
    });
  }
});

describe('the Anthropic fake streams like the real captures', () => {
  test('thinking: thinking block (deltas, signature), then text; shapes and order', async () => {
    const real = parseAnthropicSse(readFixture(THINKING)).events;
    const { events, message } = await fakeStream(
      { chunkCount: 5 },
      {
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'What is 925 / 5?' }],
      },
    );
    assertOrderRules(events, 'fake');
    assertSameKindsAndShapes(events, real);
    assert.deepEqual(
      events.filter((e) => e.data.type === 'content_block_start').map((e) => e.data.content_block.type),
      ['thinking', 'text'],
    );
    assert.equal(events[2]!.data.type, 'ping', 'a ping right after the first block start, as captured');
    const end = events.at(-2)!.data;
    assert.equal(end.delta.stop_reason, 'end_turn');
    assert.equal(end.usage.output_tokens, 10, '5 thinking + 5 text tokens');
    // A non-stream Message has every field message_start's message has.
    assertSameShape(message, real[0]!.data.message, '$', { ignore: SET_WHEN_DONE });
    assert.deepEqual(
      message.content.map((b: any) => b.type),
      ['thinking', 'text'],
    );
  });

  test('tool_use: text, then a tool_use whose input_json_delta slices join to the input', async () => {
    const real = parseAnthropicSse(readFixture(TOOL_USE)).events;
    const input = { elements: [{ location: 'San Francisco', temperature: 58, condition: 'sunny' }] };
    const { events, message } = await fakeStream(
      { toolUse: 'json', toolInput: input, chunkCount: 4 },
      {
        tools: TOOLS,
        messages: [{ role: 'user', content: 'Weather as JSON, please.' }],
      },
    );
    assertOrderRules(events, 'fake');
    assertSameKindsAndShapes(events, real);
    const start = events.find((e) => e.data.content_block?.type === 'tool_use')!;
    assert.match(start.data.content_block.id, /^toolu_01[1-9A-HJ-NP-Za-km-z]{22}$/);
    assert.deepEqual(start.data.content_block.input, {}, 'the start block has an empty input, as captured');
    const json = events
      .filter((e) => e.data.delta?.type === 'input_json_delta')
      .map((e) => e.data.delta.partial_json)
      .join('');
    assert.deepEqual(JSON.parse(json), input);
    assert.equal(events.at(-2)!.data.delta.stop_reason, 'tool_use');
    assertSameShape(message, real[0]!.data.message, '$', { ignore: SET_WHEN_DONE });
    assert.deepEqual(message.content.at(-1).input, input);
  });

  test('message ids and request ids look like the real ones', async () => {
    const real = parseAnthropicSse(readFixture(THINKING)).events;
    const { events } = await fakeStream({}, { messages: [{ role: 'user', content: 'hi' }] });
    const idPattern = /^msg_01[1-9A-HJ-NP-Za-km-z]{22}$/;
    assert.match(real[0]!.data.message.id, idPattern, 'the pattern fits the capture');
    assert.match(events[0]!.data.message.id, idPattern);
  });

  test('the comparison catches an event that lost a field', () => {
    const real = parseAnthropicSse(readFixture(THINKING)).events;
    const broken = structuredClone(real[0]!.data);
    delete broken.message.usage.cache_creation.ephemeral_1h_input_tokens;
    assert.throws(
      () => assertSameShape(broken, real[0]!.data),
      /\$\.message\.usage\.cache_creation\.ephemeral_1h_input_tokens: missing/,
    );
    const reordered = real.filter((e) => e.data.type !== 'message_delta');
    assert.throws(() => assertOrderRules(reordered, 'broken'), /message_delta/);
  });
});
