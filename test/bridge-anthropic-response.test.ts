import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatToMessage } from '../src/bridges/anthropic/response.ts';
import { usageFromAnthropic } from '../src/wire/usage.ts';

type Json = Record<string, any>;

function chat(message: Json, extra: Json = {}, finish: unknown = 'stop', choiceExtra: Json = {}): Json {
  return {
    id: 'chatcmpl-abc123',
    object: 'chat.completion',
    created: 1727346182,
    model: 'qwen3-30b-a3b',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish, ...choiceExtra }],
    usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57 },
    ...extra,
  };
}

function messageOf(body: Json, stopSequences?: string[]): Json {
  const result = chatToMessage(body, { model: 'claude-sonnet-4-5', stopSequences });
  if (!result.ok) assert.fail(`expected a message, got ${result.error.status} ${result.error.message}`);
  return result.message;
}

const USAGE_50_7 = {
  input_tokens: 50,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
  output_tokens: 7,
  service_tier: 'standard',
};

test('response: a text answer becomes one Message', () => {
  const message = messageOf(chat({ content: 'Hello there' }));
  assert.deepEqual(message, {
    id: 'msg_chatcmpl-abc123',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [{ type: 'text', text: 'Hello there' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: USAGE_50_7,
  });
});

interface ContentCase {
  name: string;
  message: Json;
  content: Json[];
}

const CONTENT: ContentCase[] = [
  {
    name: 'reasoning_content becomes a thinking block before the text',
    message: { reasoning_content: 'Let me think.', content: 'Answer' },
    content: [
      { type: 'thinking', thinking: 'Let me think.', signature: '' },
      { type: 'text', text: 'Answer' },
    ],
  },
  {
    name: 'reasoning (OpenRouter, newer vLLM) too',
    message: { reasoning: 'Hmm.', content: 'Answer' },
    content: [
      { type: 'thinking', thinking: 'Hmm.', signature: '' },
      { type: 'text', text: 'Answer' },
    ],
  },
  {
    name: 'empty reasoning and empty text give no blocks',
    message: { reasoning_content: '', content: '' },
    content: [],
  },
  {
    name: 'null content with tool calls: only tool_use blocks, arguments parsed, empty arguments are {}',
    message: {
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_2', type: 'function', function: { name: 'clock', arguments: '' } },
      ],
    },
    content: [
      { type: 'tool_use', id: 'toolu_call_1', name: 'weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'toolu_call_2', name: 'clock', input: {} },
    ],
  },
  {
    name: 'thinking, text, then tool calls, in that order',
    message: {
      content: 'Checking.',
      reasoning_content: 'Need the tool.',
      tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'f', arguments: '{}' } }],
    },
    content: [
      { type: 'thinking', thinking: 'Need the tool.', signature: '' },
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_call_9', name: 'f', input: {} },
    ],
  },
  {
    name: 'call ids with characters Anthropic ids cannot hold are cleaned and kept apart by a hash',
    message: {
      tool_calls: [
        { id: 'functions.get_weather:0', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
      ],
    },
    content: [{ type: 'tool_use', id: 'toolu_functions_get_weather_0_', name: 'get_weather', input: {} }],
  },
  {
    name: 'content parts are joined',
    message: {
      content: [
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ],
    },
    content: [{ type: 'text', text: 'ab' }],
  },
];

for (const c of CONTENT) {
  test(`response content: ${c.name}`, () => {
    const content = messageOf(chat(c.message)).content as Json[];
    assert.equal(content.length, c.content.length);
    c.content.forEach((want, i) => {
      if (want.type === 'tool_use' && want.id.endsWith('_')) {
        assert.ok(content[i].id.startsWith(want.id) && /^toolu_[A-Za-z0-9_-]+$/.test(content[i].id), content[i].id);
        assert.deepEqual({ ...content[i], id: want.id }, want);
      } else {
        assert.deepEqual(content[i], want);
      }
    });
  });
}

test('response: the same call id always maps to the same tool_use id; a missing one gets a fresh id', () => {
  const call = (id?: string) =>
    chat({ tool_calls: [{ id, type: 'function', function: { name: 'f', arguments: '{}' } }] }, {}, 'tool_calls');
  const a = messageOf(call('call_same')).content[0].id;
  const b = messageOf(call('call_same')).content[0].id;
  assert.equal(a, b);
  const c = messageOf(call(undefined)).content[0].id;
  const d = messageOf(call(undefined)).content[0].id;
  assert.match(c, /^toolu_[A-Za-z0-9_-]{20,}$/);
  assert.notEqual(c, d);
  assert.equal(messageOf(call('toolu_01abc')).content[0].id, 'toolu_01abc', 'an id that is already ours stays');
});

test('response: message ids are stable per chat id, random without one', () => {
  assert.equal(messageOf(chat({ content: 'x' })).id, messageOf(chat({ content: 'x' })).id);
  const noId = () => messageOf(chat({ content: 'x' }, { id: undefined })).id;
  assert.match(noId(), /^msg_[A-Za-z0-9_-]{20,}$/);
  assert.notEqual(noId(), noId());
});

const STOPS: {
  name: string;
  finish: unknown;
  message?: Json;
  choice?: Json;
  top?: Json;
  stopSequences?: string[];
  stop_reason: string;
  stop_sequence?: string | null;
}[] = [
  { name: 'stop', finish: 'stop', stop_reason: 'end_turn' },
  { name: 'length', finish: 'length', stop_reason: 'max_tokens' },
  {
    name: 'tool_calls',
    finish: 'tool_calls',
    message: { tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    stop_reason: 'tool_use',
  },
  {
    name: 'function_call (legacy)',
    finish: 'function_call',
    message: { function_call: { name: 'f', arguments: '{"a":1}' } },
    stop_reason: 'tool_use',
  },
  { name: 'content_filter', finish: 'content_filter', stop_reason: 'refusal' },
  { name: 'no finish reason', finish: null, stop_reason: 'end_turn' },
  {
    name: 'stop with tool calls (Ollama) is tool_use',
    finish: 'stop',
    message: { tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    stop_reason: 'tool_use',
  },
  {
    name: 'length with tool calls stays max_tokens',
    finish: 'length',
    message: { tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    stop_reason: 'max_tokens',
  },
  {
    name: 'vLLM stop_reason naming a requested sequence',
    finish: 'stop',
    choice: { stop_reason: 'END' },
    stopSequences: ['STOP', 'END'],
    stop_reason: 'stop_sequence',
    stop_sequence: 'END',
  },
  {
    name: 'llama.cpp stopping_word naming a requested sequence',
    finish: 'stop',
    choice: { stopping_word: '###' },
    stopSequences: ['###'],
    stop_reason: 'stop_sequence',
    stop_sequence: '###',
  },
  {
    name: 'llama.cpp verbose stopping_word',
    finish: 'stop',
    top: { __verbose: { stopping_word: '###' } },
    stopSequences: ['###'],
    stop_reason: 'stop_sequence',
    stop_sequence: '###',
  },
  {
    name: 'a stop string the client did not ask for',
    finish: 'stop',
    choice: { stop_reason: '<|im_end|>' },
    stopSequences: ['END'],
    stop_reason: 'end_turn',
    stop_sequence: null,
  },
  {
    name: 'a stop token id',
    finish: 'stop',
    choice: { stop_reason: 151645 },
    stopSequences: ['END'],
    stop_reason: 'end_turn',
    stop_sequence: null,
  },
  {
    name: 'a reported sequence without stop_sequences in the request',
    finish: 'stop',
    choice: { stop_reason: 'END' },
    stop_reason: 'end_turn',
    stop_sequence: null,
  },
];

for (const c of STOPS) {
  test(`response stop reason: ${c.name}`, () => {
    const message = messageOf(
      chat(c.message ?? { content: 'x' }, c.top ?? {}, c.finish, c.choice ?? {}),
      c.stopSequences,
    );
    assert.equal(message.stop_reason, c.stop_reason);
    assert.equal(message.stop_sequence, c.stop_sequence ?? null);
  });
}

test('response: a refusal becomes the text and stop_reason refusal', () => {
  const message = messageOf(chat({ content: null, refusal: 'I cannot help with that.' }));
  assert.deepEqual(message.content, [{ type: 'text', text: 'I cannot help with that.' }]);
  assert.equal(message.stop_reason, 'refusal');
});

const USAGE: { name: string; top: Json; usage: Json }[] = [
  {
    name: 'cached prompt tokens are cache reads, the rest input',
    top: {
      usage: {
        prompt_tokens: 1000,
        completion_tokens: 20,
        total_tokens: 1020,
        prompt_tokens_details: { cached_tokens: 800 },
      },
    },
    usage: { input_tokens: 200, cache_creation_input_tokens: 0, cache_read_input_tokens: 800, output_tokens: 20 },
  },
  {
    name: 'reported cache writes (OpenRouter) are cache creation',
    top: {
      usage: {
        prompt_tokens: 1000,
        completion_tokens: 20,
        total_tokens: 1020,
        prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 600 },
      },
    },
    usage: { input_tokens: 300, cache_creation_input_tokens: 600, cache_read_input_tokens: 100, output_tokens: 20 },
  },
  {
    name: 'llama.cpp timings when there is no usage',
    top: { usage: undefined, timings: { prompt_n: 5, cache_n: 13, predicted_n: 42 } },
    usage: { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 13, output_tokens: 42 },
  },
  {
    name: 'zeros when nothing was reported',
    top: { usage: undefined },
    usage: { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 },
  },
];

for (const c of USAGE) {
  test(`response usage: ${c.name}`, () => {
    const usage = messageOf(chat({ content: 'x' }, c.top)).usage;
    for (const [key, value] of Object.entries(c.usage)) assert.equal(usage[key], value, key);
    // read back the way the call log reads Anthropic usage: the prompt total survives the trip
    const back = usageFromAnthropic({ usage });
    const sent = c.top.usage ?? {};
    if (sent.prompt_tokens !== undefined) assert.equal(back?.prompt_tokens, sent.prompt_tokens);
  });
}

const BAD: { name: string; body: Json; says: RegExp }[] = [
  {
    name: 'unparsable arguments',
    body: chat({
      tool_calls: [{ id: 'c', type: 'function', function: { name: 'weather', arguments: '{"city": "Par' } }],
    }),
    says: /"weather"/,
  },
  {
    name: 'arguments that are JSON but not an object',
    body: chat({ tool_calls: [{ id: 'c', type: 'function', function: { name: 'list', arguments: '[1,2]' } }] }),
    says: /"list"/,
  },
  { name: 'no choices', body: { id: 'x', choices: [] }, says: /no choices/ },
  {
    name: 'a choice without a message',
    body: { id: 'x', choices: [{ index: 0, finish_reason: 'stop' }] },
    says: /message/,
  },
];

for (const c of BAD) {
  test(`response 502: ${c.name}`, () => {
    const result = chatToMessage(c.body, { model: 'm' });
    if (result.ok) assert.fail('expected a failure');
    assert.equal(result.error.status, 502);
    assert.match(result.error.message, c.says);
  });
}
