/**
 * The chat → Response translation of a whole answer: output items in the API's order and shapes,
 * status and incomplete details from the finish reason, usage in the API's names, and the echo
 * of the request with the API's defaults; checked against the real captures' final Responses.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatToResponse, outputText, type ResponseOpts } from '../src/bridges/responses/response.ts';
import {
  newCallId,
  newFunctionCallId,
  newMessageId,
  newReasoningId,
  newResponseId,
} from '../src/bridges/responses/ids.ts';
import { assertSameShape } from './fakes/shape.ts';
import { readFixture } from './helpers/fixtures.ts';
import { parseResponsesSse } from './helpers/responses-events.ts';

type Json = Record<string, any>;

const OPTS: ResponseOpts = {
  id: 'resp_' + 'a'.repeat(48),
  createdAt: 1727346182,
  model: 'gpt-4o',
  request: { model: 'gpt-4o', input: 'hi' },
  clock: () => 1727346185,
};

function chat(message: Json, finish: unknown = 'stop', extra: Json = {}): Json {
  return {
    id: 'chatcmpl-abc123',
    object: 'chat.completion',
    created: 1727346182,
    model: 'qwen3-30b-a3b',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
    usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57 },
    ...extra,
  };
}

function responseOf(body: Json, opts: Partial<ResponseOpts> = {}): Json {
  const result = chatToResponse(body, { ...OPTS, ...opts });
  if (!result.ok) assert.fail(`expected a response, got ${result.error.status} ${result.error.message}`);
  return result.response;
}

const ours = (id: string) => id.replace(/_[0-9a-f]{48}$/, '_');

/** Output items with the gateway's random ids (item ids, call ids it had to make up) reduced to their prefix. */
function items(response: Json): Json[] {
  return response.output.map((item: Json) =>
    item.call_id ? { ...item, id: ours(item.id), call_id: ours(item.call_id) } : { ...item, id: ours(item.id) },
  );
}

const USAGE_50_7 = {
  input_tokens: 50,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 7,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 57,
};
const text = (t: string) => ({ type: 'output_text', annotations: [], logprobs: [], text: t });

test('response: a text answer is one completed Response with the API defaults echoed', () => {
  const response = responseOf(chat({ content: 'Hello there' }));
  assert.match(response.output[0].id, /^msg_[0-9a-f]{48}$/);
  assert.deepEqual(
    { ...response, output: items(response) },
    {
      id: OPTS.id,
      object: 'response',
      created_at: 1727346182,
      status: 'completed',
      background: false,
      completed_at: 1727346185,
      error: null,
      frequency_penalty: 0,
      incomplete_details: null,
      instructions: null,
      max_output_tokens: null,
      max_tool_calls: null,
      model: 'gpt-4o',
      output: [{ id: 'msg_', type: 'message', status: 'completed', content: [text('Hello there')], role: 'assistant' }],
      parallel_tool_calls: true,
      presence_penalty: 0,
      previous_response_id: null,
      prompt_cache_key: null,
      prompt_cache_retention: null,
      reasoning: { effort: null, summary: null },
      safety_identifier: null,
      service_tier: 'default',
      store: false,
      temperature: 1,
      text: { format: { type: 'text' }, verbosity: 'medium' },
      tool_choice: 'auto',
      tools: [],
      top_logprobs: 0,
      top_p: 1,
      truncation: 'disabled',
      usage: USAGE_50_7,
      user: null,
      metadata: {},
    },
  );
  assert.equal(outputText(response), 'Hello there');
});

interface OutputCase {
  name: string;
  message: Json;
  finish?: unknown;
  output: Json[];
}

const OUTPUTS: OutputCase[] = [
  {
    name: 'reasoning_content is a reasoning item (its text the summary) before the message',
    message: { reasoning_content: 'Let me think.', content: 'Answer' },
    output: [
      { id: 'rs_', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Let me think.' }] },
      { id: 'msg_', type: 'message', status: 'completed', content: [text('Answer')], role: 'assistant' },
    ],
  },
  {
    name: '`reasoning` (OpenRouter, newer vLLM) too',
    message: { reasoning: 'Hmm.', content: 'A' },
    output: [
      { id: 'rs_', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Hmm.' }] },
      { id: 'msg_', type: 'message', status: 'completed', content: [text('A')], role: 'assistant' },
    ],
  },
  {
    name: 'empty reasoning and empty text give no items',
    message: { reasoning_content: '', content: '' },
    output: [],
  },
  {
    name: 'tool calls are function_call items with the chat call id as call_id and the arguments as written; empty arguments are {}',
    message: {
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_2', type: 'function', function: { name: 'clock', arguments: '' } },
      ],
    },
    finish: 'tool_calls',
    output: [
      {
        id: 'fc_',
        type: 'function_call',
        status: 'completed',
        arguments: '{"city":"Paris"}',
        call_id: 'call_1',
        name: 'weather',
      },
      { id: 'fc_', type: 'function_call', status: 'completed', arguments: '{}', call_id: 'call_2', name: 'clock' },
    ],
  },
  {
    name: 'reasoning, text, then calls, in that order; arguments that are not JSON pass as they are (the client judges them)',
    message: {
      content: 'Checking.',
      reasoning_content: 'Need the tool.',
      tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'f', arguments: '{"a":' } }],
    },
    finish: 'tool_calls',
    output: [
      { id: 'rs_', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Need the tool.' }] },
      { id: 'msg_', type: 'message', status: 'completed', content: [text('Checking.')], role: 'assistant' },
      { id: 'fc_', type: 'function_call', status: 'completed', arguments: '{"a":', call_id: 'call_9', name: 'f' },
    ],
  },
  {
    name: 'arguments sent as an object become a JSON string; the legacy function_call too',
    message: { function_call: { name: 'g', arguments: { x: 1 } } },
    output: [
      { id: 'fc_', type: 'function_call', status: 'completed', arguments: '{"x":1}', call_id: 'call_', name: 'g' },
    ],
  },
  {
    name: 'a refusal is a refusal part of the message',
    message: { content: null, refusal: 'I cannot help with that.' },
    output: [
      {
        id: 'msg_',
        type: 'message',
        status: 'completed',
        content: [{ type: 'refusal', refusal: 'I cannot help with that.' }],
        role: 'assistant',
      },
    ],
  },
  {
    name: 'content parts are joined',
    message: {
      content: [
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ],
    },
    output: [{ id: 'msg_', type: 'message', status: 'completed', content: [text('ab')], role: 'assistant' }],
  },
  {
    name: 'a length finish leaves the last item incomplete',
    message: { content: 'cut sh' },
    finish: 'length',
    output: [{ id: 'msg_', type: 'message', status: 'incomplete', content: [text('cut sh')], role: 'assistant' }],
  },
];

for (const c of OUTPUTS) {
  test(`response output: ${c.name}`, () => {
    assert.deepEqual(items(responseOf(chat(c.message, c.finish ?? 'stop'))), c.output);
  });
}

const STATUSES: { finish: unknown; status: string; details: Json | null }[] = [
  { finish: 'stop', status: 'completed', details: null },
  { finish: 'tool_calls', status: 'completed', details: null },
  { finish: null, status: 'completed', details: null },
  { finish: 'length', status: 'incomplete', details: { reason: 'max_output_tokens' } },
  { finish: 'content_filter', status: 'incomplete', details: { reason: 'content_filter' } },
];

for (const c of STATUSES) {
  test(`response status: finish_reason ${JSON.stringify(c.finish)} is ${c.status}`, () => {
    const response = responseOf(chat({ content: 'x' }, c.finish));
    assert.equal(response.status, c.status);
    assert.deepEqual(response.incomplete_details, c.details);
    assert.equal(response.completed_at, c.status === 'completed' ? 1727346185 : null);
  });
}

const USAGES: { name: string; extra: Json; usage: Json }[] = [
  {
    name: 'cached and reasoning tokens are in the details',
    extra: {
      usage: {
        prompt_tokens: 120,
        completion_tokens: 30,
        total_tokens: 150,
        prompt_tokens_details: { cached_tokens: 100 },
        completion_tokens_details: { reasoning_tokens: 12 },
      },
    },
    usage: {
      input_tokens: 120,
      input_tokens_details: { cached_tokens: 100 },
      output_tokens: 30,
      output_tokens_details: { reasoning_tokens: 12 },
      total_tokens: 150,
    },
  },
  {
    name: 'llama.cpp timings stand in for a missing usage',
    extra: { usage: undefined, timings: { prompt_n: 11, predicted_n: 4, cache_n: 5 } },
    usage: {
      input_tokens: 16,
      input_tokens_details: { cached_tokens: 5 },
      output_tokens: 4,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 20,
    },
  },
  {
    name: 'no usage at all is zeros',
    extra: { usage: undefined },
    usage: {
      input_tokens: 0,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 0,
    },
  },
];

for (const c of USAGES) {
  test(`response usage: ${c.name}`, () => {
    assert.deepEqual(responseOf(chat({ content: 'x' }, 'stop', c.extra)).usage, c.usage);
  });
}

test('response: the request is echoed: instructions, tools (flat, with the fields the API writes), choice, sampling, text, reasoning, store', () => {
  const request = {
    model: 'gpt-4o',
    input: 'x',
    instructions: 'Be brief.',
    temperature: 0.2,
    top_p: 0.8,
    max_output_tokens: 99,
    parallel_tool_calls: false,
    tools: [
      { type: 'function', name: 'f', parameters: { type: 'object' }, strict: true },
      { type: 'function', name: 'g', description: 'G' },
    ],
    tool_choice: { type: 'function', name: 'f' },
    text: { format: { type: 'json_schema', name: 'n', schema: {} }, verbosity: 'low' },
    reasoning: { effort: 'high', summary: 'auto' },
    store: true,
    background: true,
    previous_response_id: 'resp_prev',
    metadata: { k: 'v' },
    user: 'u',
    safety_identifier: 'sid',
    prompt_cache_key: 'pck',
    truncation: 'auto',
    top_logprobs: 2,
    max_tool_calls: 3,
  };
  const r = responseOf(chat({ content: 'x' }), { request });
  assert.deepEqual(
    [
      r.instructions,
      r.temperature,
      r.top_p,
      r.max_output_tokens,
      r.parallel_tool_calls,
      r.tool_choice,
      r.text,
      r.reasoning,
      r.store,
      r.background,
      r.previous_response_id,
      r.metadata,
      r.user,
      r.safety_identifier,
      r.prompt_cache_key,
      r.truncation,
      r.top_logprobs,
      r.max_tool_calls,
    ],
    [
      'Be brief.',
      0.2,
      0.8,
      99,
      false,
      { type: 'function', name: 'f' },
      request.text,
      { effort: 'high', summary: 'auto' },
      true,
      true,
      'resp_prev',
      { k: 'v' },
      'u',
      'sid',
      'pck',
      'auto',
      2,
      3,
    ],
  );
  assert.deepEqual(r.tools, [
    { type: 'function', description: null, name: 'f', parameters: { type: 'object' }, strict: true },
    { type: 'function', description: 'G', name: 'g', parameters: null, strict: null },
  ]);
});

test("response: an answer without a message is the backend's failure (502)", () => {
  for (const body of [{ choices: [] }, { choices: [{ index: 0 }] }, {}]) {
    const result = chatToResponse(body, OPTS);
    assert.equal(result.ok, false);
    if (!result.ok) assert.equal(result.error.status, 502);
  }
});

test('response: outputText joins every output_text of every message item, and nothing else', () => {
  assert.equal(
    outputText({
      output: [
        { type: 'reasoning', summary: [{ type: 'summary_text', text: 'no' }] },
        {
          type: 'message',
          content: [
            { type: 'output_text', text: 'a' },
            { type: 'refusal', refusal: 'no' },
            { type: 'output_text', text: 'b' },
          ],
        },
        { type: 'function_call', arguments: 'no' },
        { type: 'message', content: [{ type: 'output_text', text: 'c' }] },
      ],
    }),
    'abc',
  );
  assert.equal(outputText({}), '');
});

test('ids: resp_, msg_, fc_, rs_, call_ with 48 random hex characters, never repeating', () => {
  for (const [make, prefix] of [
    [newResponseId, 'resp_'],
    [newMessageId, 'msg_'],
    [newFunctionCallId, 'fc_'],
    [newReasoningId, 'rs_'],
    [newCallId, 'call_'],
  ] as const) {
    const ids = new Set(Array.from({ length: 200 }, make));
    assert.equal(ids.size, 200);
    for (const id of ids) assert.match(id, new RegExp(`^${prefix}[0-9a-f]{48}$`));
  }
});

for (const file of ['llm/openai/responses_stream_text.sse.txt', 'llm/openai/responses_stream_function_call.sse.txt']) {
  test(`response: shaped like the final Response of ${file.split('/').pop()}`, () => {
    const real = parseResponsesSse(readFixture(file)).at(-1)!.data.response;
    const item = real.output[0];
    const message =
      item.type === 'message'
        ? { content: item.content[0].text }
        : {
            content: null,
            tool_calls: [
              { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } },
            ],
          };
    const usage = {
      prompt_tokens: real.usage.input_tokens,
      completion_tokens: real.usage.output_tokens,
      total_tokens: real.usage.total_tokens,
    };
    const response = responseOf(chat(message, item.type === 'message' ? 'stop' : 'tool_calls', { usage }));
    // the capture's tools are OpenAI's own kinds, and its model says effort "none" where a chat model has none
    assertSameShape(response, real, '$', { ignore: ['$.tools', '$.reasoning.effort'] });
    assert.deepEqual(
      items(response).map((i) => ({ ...i, id: undefined })),
      real.output.map((i: Json) => ({ ...i, id: undefined })),
    );
    assert.deepEqual(response.usage, real.usage);
  });
}
