import { test } from 'node:test';
import assert from 'node:assert/strict';
import { estimateInputTokens } from '../src/bridges/anthropic/count-tokens.ts';

const text400 = 'abcd'.repeat(100); // 400 bytes: 100 tokens

const CASES: { name: string; body: Record<string, unknown>; tokens: number }[] = [
  {
    name: 'one short message: its bytes / 4 plus the message overhead',
    body: { messages: [{ role: 'user', content: text400 }] },
    tokens: 100 + 4,
  },
  {
    name: 'a system prompt counts like a message',
    body: { system: text400, messages: [{ role: 'user', content: text400 }] },
    tokens: 200 + 8,
  },
  {
    name: 'system blocks',
    body: {
      system: [
        { type: 'text', text: text400 },
        { type: 'text', text: text400 },
      ],
      messages: [],
    },
    tokens: 200 + 4,
  },
  {
    name: 'multi-byte text counts its UTF-8 bytes',
    body: { messages: [{ role: 'user', content: '日本語'.repeat(40) }] },
    tokens: 90 + 4,
  },
  {
    name: 'tool calls and results',
    body: {
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'abcd', input: { q: 'x' } }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: text400 }] }],
        },
      ],
    },
    tokens: Math.ceil((4 + '{"q":"x"}'.length + 400) / 4) + 8,
  },
  {
    name: 'an image is a flat cost, not its base64',
    body: {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(1_000_000) } },
          ],
        },
      ],
    },
    tokens: 1600 + 4,
  },
  {
    name: 'thinking in the history is not counted',
    body: { messages: [{ role: 'assistant', content: [{ type: 'thinking', thinking: text400, signature: 's' }] }] },
    tokens: 4,
  },
  {
    name: 'tools: name, description and schema, plus an overhead each',
    body: { messages: [], tools: [{ name: 'abcd', description: text400, input_schema: { type: 'object' } }] },
    tokens: Math.ceil((4 + 400 + '{"type":"object"}'.length) / 4) + 8,
  },
  {
    name: 'odd shapes count what they can, never throw',
    body: {
      messages: [null, 5, { role: 'user' }, { role: 'user', content: [null, { type: 'mystery' }] }],
      tools: 'x',
      system: 7,
    },
    tokens: 3 * 4,
  },
];

for (const c of CASES) {
  test(`count tokens: ${c.name}`, () => assert.equal(estimateInputTokens(c.body), c.tokens));
}

test('count tokens: the estimate grows with the prompt', () => {
  const body = (n: number) => ({
    messages: Array.from({ length: n }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `message number ${i} `.repeat(20),
    })),
  });
  let last = 0;
  for (const n of [1, 2, 5, 20, 100]) {
    const tokens = estimateInputTokens(body(n));
    assert.ok(tokens > last, `${n} messages: ${tokens} > ${last}`);
    last = tokens;
  }
});
