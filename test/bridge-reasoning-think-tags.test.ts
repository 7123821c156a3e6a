/**
 * ThinkTagsRelabel: reasoning deltas folded into content as <think>…</think> over whole
 * streams (reasoning then content, reasoning then a tool call, reasoning only then finish, two
 * choices), chunks without reasoning kept as the same string, and a non-stream message.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ThinkTagsRelabel } from '../src/bridges/reasoning/think-tags.ts';

const chunk = (delta: Record<string, unknown>, finish: string | null = null, index = 0) =>
  JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index, delta, finish_reason: finish }] });

/** Runs a stream through one relabeller; returns the sent data texts. */
function relabelStream(chunks: string[]): string[] {
  const r = new ThinkTagsRelabel();
  return chunks.map((c) => r.relabelChunk(c));
}

/** The content a client accumulates, and the deltas' reasoning fields left over. */
function contentOf(sent: string[]): { content: string; leftover: number } {
  let content = '';
  let leftover = 0;
  for (const s of sent) {
    for (const c of JSON.parse(s).choices) {
      if (typeof c.delta?.content === 'string') content += c.delta.content;
      if (typeof c.delta?.reasoning_content === 'string' || typeof c.delta?.reasoning === 'string') leftover++;
    }
  }
  return { content, leftover };
}

describe('ThinkTagsRelabel.relabelChunk', () => {
  const streams: [string, string[], string, boolean[]][] = [
    [
      'llama.cpp: reasoning_content then content',
      [
        chunk({ role: 'assistant', content: null }),
        chunk({ reasoning_content: 'Let me' }),
        chunk({ reasoning_content: ' think.' }),
        chunk({ content: 'Hello' }),
        chunk({ content: '!' }),
        chunk({}, 'stop'),
      ],
      '<think>Let me think.</think>Hello!',
      [false, true, true, true, false, false],
    ],
    [
      'Ollama / OpenRouter: reasoning beside an empty content',
      [
        chunk({ role: 'assistant', content: '', reasoning: 'hmm' }),
        chunk({ role: 'assistant', content: 'ok' }),
        chunk({ role: 'assistant', content: '' }, 'stop'),
      ],
      '<think>hmm</think>ok',
      [true, true, false],
    ],
    [
      'vLLM: the same text as both fields, taken once',
      [chunk({ reasoning_content: 'a', reasoning: 'a' }), chunk({ content: 'b', reasoning_content: null })],
      '<think>a</think>b',
      [true, true],
    ],
    [
      'reasoning and content in one delta',
      [chunk({ reasoning_content: 'r', content: 'c' })],
      '<think>r</think>c',
      [true],
    ],
    [
      'reasoning then a tool call: closed before the call',
      [
        chunk({ reasoning_content: 'call the tool' }),
        chunk({ tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'w', arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] }),
        chunk({}, 'tool_calls'),
      ],
      '<think>call the tool</think>',
      [true, true, false, false],
    ],
    [
      'reasoning only, closed at the finish',
      [chunk({ reasoning_content: 'out of tokens' }), chunk({}, 'length')],
      '<think>out of tokens</think>',
      [true, true],
    ],
    [
      'reasoning only, finish chunk without a delta',
      [chunk({ reasoning_content: 'x' }), JSON.stringify({ choices: [{ index: 0, finish_reason: 'stop' }] })],
      '<think>x</think>',
      [true, true],
    ],
    [
      'no reasoning at all: every chunk as it came',
      [chunk({ role: 'assistant', content: '' }), chunk({ content: 'plain' }), chunk({}, 'stop')],
      'plain',
      [false, false, false],
    ],
    ['a null reasoning field is no reasoning', [chunk({ content: 'x', reasoning_content: null })], 'x', [false]],
  ];
  for (const [name, chunks, content, changed] of streams) {
    test(name, () => {
      const sent = relabelStream(chunks);
      assert.deepEqual(
        sent.map((s, i) => s !== chunks[i]),
        changed,
        'which chunks were rewritten',
      );
      const got = contentOf(sent);
      assert.equal(got.content, content);
      assert.equal(got.leftover, 0, 'no reasoning field reaches the client');
    });
  }

  test('a rewritten chunk loses its null reasoning field too', () => {
    const sent = relabelStream([chunk({ reasoning_content: 'a' }), chunk({ content: 'b', reasoning_content: null })]);
    assert.deepEqual(JSON.parse(sent[1]).choices[0].delta, { content: '</think>b' });
  });

  test('a tool call keeps its delta beside the close tag', () => {
    const sent = relabelStream([chunk({ reasoning_content: 'r' }), chunk({ tool_calls: [{ index: 0, id: 't' }] })]);
    assert.deepEqual(JSON.parse(sent[1]).choices[0].delta, {
      tool_calls: [{ index: 0, id: 't' }],
      content: '</think>',
    });
  });

  test('choices are tracked apart', () => {
    const sent = relabelStream([
      chunk({ reasoning_content: 'a' }, null, 0),
      chunk({ reasoning_content: 'b' }, null, 1),
      chunk({ content: 'A' }, null, 0),
      chunk({}, 'stop', 1),
    ]);
    const by = (i: number) =>
      sent
        .map((s) => JSON.parse(s).choices[0])
        .filter((c) => c.index === i)
        .map((c) => c.delta.content ?? '')
        .join('');
    assert.equal(by(0), '<think>a</think>A');
    assert.equal(by(1), '<think>b</think>');
  });

  test('reasoning again after content opens a new block', () => {
    const got = contentOf(
      relabelStream([
        chunk({ reasoning_content: 'a' }),
        chunk({ content: 'b' }),
        chunk({ reasoning_content: 'c' }),
        chunk({}, 'stop'),
      ]),
    );
    assert.equal(got.content, '<think>a</think>b<think>c</think>');
  });

  test('text that is not JSON, or not a chunk, passes as it is', () => {
    const r = new ThinkTagsRelabel();
    for (const data of ['reasoning is {not json', '{"reasoning":"top level, no choices"}', '[DONE]'])
      assert.equal(r.relabelChunk(data), data);
  });

  test('usage-only chunks pass as they are while a tag is open', () => {
    const r = new ThinkTagsRelabel();
    r.relabelChunk(chunk({ reasoning_content: 'a' }));
    const usage = '{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}';
    assert.equal(r.relabelChunk(usage), usage);
  });
});

describe('ThinkTagsRelabel.relabelMessage', () => {
  test('reasoning_content before the content', () => {
    const completion = {
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Hi', reasoning_content: 'greet' }, finish_reason: 'stop' },
      ],
    };
    assert.equal(new ThinkTagsRelabel().relabelMessage(completion), true);
    assert.deepEqual(completion.choices[0].message, { role: 'assistant', content: '<think>greet</think>Hi' });
  });

  test("Ollama's reasoning, with a tool call and null content", () => {
    const completion = {
      choices: [{ message: { role: 'assistant', content: null, reasoning: 'use w', tool_calls: [{ id: 't' }] } }],
    };
    assert.equal(new ThinkTagsRelabel().relabelMessage(completion), true);
    assert.deepEqual(completion.choices[0].message, {
      role: 'assistant',
      content: '<think>use w</think>',
      tool_calls: [{ id: 't' }],
    });
  });

  test('nothing to relabel: untouched, false', () => {
    const completion = { choices: [{ message: { role: 'assistant', content: 'x', reasoning_content: null } }] };
    const before = structuredClone(completion);
    assert.equal(new ThinkTagsRelabel().relabelMessage(completion), false);
    assert.deepEqual(completion, before);
    assert.equal(new ThinkTagsRelabel().relabelMessage({ object: 'error' }), false);
  });
});
