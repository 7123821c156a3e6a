/**
 * The one token estimate (src/wire/token-estimate.ts) and the body estimates built on it
 * (src/wire/prompt-tokens.ts), as tables: the text rules, the content walker, then each body.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CHAT_USAGE_RULE,
  estimateTokens,
  PROMPT_RULE,
  TEXT_RULE,
  TokenTally,
  type TokenRule,
} from '../src/wire/token-estimate.ts';
import {
  estimateInputTokens,
  estimatePromptTokens,
  estimateResponsesTokens,
  estimateStringsTokens,
} from '../src/wire/prompt-tokens.ts';

const TEXT_CASES: { text: string; rule: TokenRule; tokens: number }[] = [
  // four characters a token, at least 1 for non-empty text (the call log's speech estimate)
  { text: '', rule: TEXT_RULE, tokens: 0 },
  { text: 'a', rule: TEXT_RULE, tokens: 1 },
  { text: 'abcd', rule: TEXT_RULE, tokens: 1 },
  { text: 'abcde', rule: TEXT_RULE, tokens: 1 },
  { text: 'abcdef', rule: TEXT_RULE, tokens: 2 },
  { text: 'x'.repeat(400), rule: TEXT_RULE, tokens: 100 },
  { text: '日本語', rule: TEXT_RULE, tokens: 1 },
  // rounded up: synthesised chat usage
  { text: '', rule: CHAT_USAGE_RULE, tokens: 0 },
  { text: 'a', rule: CHAT_USAGE_RULE, tokens: 1 },
  { text: 'abcd', rule: CHAT_USAGE_RULE, tokens: 1 },
  { text: 'abcde', rule: CHAT_USAGE_RULE, tokens: 2 },
  { text: 'x'.repeat(400), rule: CHAT_USAGE_RULE, tokens: 100 },
  { text: '日本語', rule: CHAT_USAGE_RULE, tokens: 1 },
  // UTF-8 bytes, rounded up: count_tokens
  { text: 'a', rule: PROMPT_RULE, tokens: 1 },
  { text: 'abcde', rule: PROMPT_RULE, tokens: 2 },
  { text: '日本語', rule: PROMPT_RULE, tokens: 3 },
  { text: 'é', rule: PROMPT_RULE, tokens: 1 },
];

for (const c of TEXT_CASES) {
  const rule = `${c.rule.measure}, ${c.rule.rounding}`;
  test(`text tokens: ${JSON.stringify(c.text.slice(0, 8))} (${c.text.length} chars, ${rule}) → ${c.tokens}`, () =>
    assert.equal(estimateTokens(c.text, c.rule), c.tokens));
}

test('text tokens: the default rule is four characters a token, to the nearest, at least 1', () => {
  assert.equal(estimateTokens(''), 0);
  assert.equal(estimateTokens('a'), 1);
  assert.equal(estimateTokens('abcd'), 1);
  assert.equal(estimateTokens('x'.repeat(400)), 100);
});

const CONTENT_CASES: { name: string; content: unknown; parts?: 'blocks' | 'text'; tokens: number }[] = [
  { name: 'a string', content: 'abcd'.repeat(3), tokens: 3 },
  { name: 'not a content', content: 42, tokens: 0 },
  { name: 'text blocks', content: [{ type: 'text', text: 'abcd' }, 'abcd', null], tokens: 1 },
  { name: 'an image block is flat', content: [{ type: 'image', source: { data: 'A'.repeat(9999) } }], tokens: 1600 },
  { name: 'blocks skip a typed part they do not know', content: [{ type: 'input_text', text: 'abcd' }], tokens: 0 },
  {
    name: 'parts read as text: every part’s text, whatever its type',
    content: [
      { type: 'input_text', text: 'abcd' },
      { type: 'output_text', text: 'abcd' },
      { type: 'image', text: 'abcd' },
    ],
    parts: 'text',
    tokens: 3,
  },
  {
    name: 'a document: title, text source, nested content',
    content: [{ type: 'document', title: 'abcd', source: { type: 'text', data: 'abcd', content: 'abcd' } }],
    tokens: 3,
  },
  {
    name: 'a PDF document counts only its title',
    content: [{ type: 'document', title: 'abcd', source: { type: 'base64', data: 'A'.repeat(400) } }],
    tokens: 1,
  },
  {
    name: 'a search result: title, source, content',
    content: [{ type: 'search_result', title: 'abcd', source: 'abcd', content: [{ type: 'text', text: 'abcd' }] }],
    tokens: 3,
  },
];

for (const c of CONTENT_CASES) {
  test(`content tokens: ${c.name}`, () =>
    assert.equal(new TokenTally(PROMPT_RULE).content(c.content, c.parts).tokens(), c.tokens));
}

const text400 = 'abcd'.repeat(100); // 400 bytes: 100 tokens

const MESSAGES_CASES: { name: string; body: Record<string, unknown>; tokens: number }[] = [
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

for (const c of MESSAGES_CASES) {
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

const CHAT_USAGE_CASES: { name: string; body: Record<string, unknown>; tokens: number }[] = [
  { name: 'string contents, characters rounded up', body: { messages: [{ content: 'abcde' }] }, tokens: 2 },
  {
    name: 'a content list counts its JSON text',
    body: { messages: [{ content: [{ type: 'text', text: 'hi' }] }, null, { content: null }] },
    tokens: Math.ceil('[{"type":"text","text":"hi"}]'.length / 4),
  },
  { name: 'a completions prompt', body: { prompt: 'abcde' }, tokens: 2 },
  { name: 'messages win over a prompt', body: { messages: [], prompt: 'abcde' }, tokens: 0 },
  { name: 'nothing to count', body: { input: 'abcd' }, tokens: 0 },
];

for (const c of CHAT_USAGE_CASES) {
  test(`synthesised chat usage: ${c.name}`, () => assert.equal(estimatePromptTokens(c.body), c.tokens));
}

test('responses: instructions, history and input items (contents, arguments, outputs), to the nearest', () => {
  const items = [
    { type: 'message', content: [{ type: 'input_text', text: 'abcd' }] },
    { type: 'function_call', arguments: '{"a":1}' },
    { type: 'function_call_output', output: 'abcd' },
    null,
  ];
  assert.equal(estimateResponsesTokens({ instructions: 'abcd', input: 'abcd' }, items), 6);
  assert.equal(estimateResponsesTokens({ input: items }), 4);
  assert.equal(estimateResponsesTokens({ input: 'a' }), 1);
});

test('strings: a string, or a list of strings and token ids (four characters each)', () => {
  assert.equal(estimateStringsTokens('abcd'.repeat(5)), 5);
  assert.equal(estimateStringsTokens(['abcd', 7, 8, null, [1, 2]]), 3);
  assert.equal(estimateStringsTokens(undefined), 0);
});
