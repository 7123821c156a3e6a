/**
 * The Responses → chat request translation, rule by rule: the conversation (messages, function
 * calls and their outputs, reasoning, references, stored history), tools and tool_choice,
 * sampling and format fields; and each client mistake as the 400 that names its field.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { responsesToChat, type ResponsesToChatOptions } from '../src/bridges/responses/request.ts';

type Body = Record<string, unknown>;
const OPTS: ResponsesToChatOptions = { model: 'qwen3-coder', stream: false };

function chatOf(body: Body, opts: Partial<ResponsesToChatOptions> = {}): Record<string, any> {
  const result = responsesToChat(body, { ...OPTS, ...opts });
  if (!result.ok) assert.fail(`expected a translation, got ${result.error.status} ${result.error.message}`);
  return result.chat;
}

const user = (content: unknown) => ({ role: 'user', content });
const call = (callId: string, name: string, args = '{}') => ({
  type: 'function_call',
  call_id: callId,
  name,
  arguments: args,
});
const output = (callId: string, out: unknown) => ({ type: 'function_call_output', call_id: callId, output: out });
const chatCall = (id: string, name: string, args = '{}') => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});
const weather = {
  type: 'function',
  name: 'weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
};
const clock = { type: 'function', name: 'clock', parameters: { type: 'object', properties: {} }, strict: true };

interface Case {
  name: string;
  body: Body;
  opts?: Partial<ResponsesToChatOptions>;
  /** Expected `messages`. */
  messages?: unknown[];
  /** Expected fields besides `messages`, each compared deeply. */
  fields?: Record<string, unknown>;
  /** Fields that must be absent. */
  absent?: string[];
}

const CASES: Case[] = [
  {
    name: 'a string input is one user message; the model is set; nothing else is added',
    body: { model: 'gpt-4o', input: 'Hello' },
    messages: [{ role: 'user', content: 'Hello' }],
    fields: { model: 'qwen3-coder' },
    absent: [
      'stream',
      'stream_options',
      'tools',
      'tool_choice',
      'parallel_tool_calls',
      'max_tokens',
      'response_format',
      'user',
    ],
  },
  {
    name: 'an AI SDK tool loop: the user message, the call and its output',
    body: {
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Weather in Oslo?' }] },
        call('call_1', 'weather', '{"city":"Oslo"}'),
        output('call_1', '{"temp":3}'),
      ],
      tools: [weather],
    },
    messages: [
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [chatCall('call_1', 'weather', '{"city":"Oslo"}')] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp":3}' },
    ],
  },
  {
    name: 'two parallel calls merge into one assistant message, with the text said before them',
    body: {
      input: [
        user('Weather and time?'),
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.' }] },
        call('call_a', 'weather', '{"city":"Oslo"}'),
        call('call_b', 'clock'),
        output('call_a', 'cold'),
        output('call_b', 'noon'),
      ],
    },
    messages: [
      { role: 'user', content: 'Weather and time?' },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [chatCall('call_a', 'weather', '{"city":"Oslo"}'), chatCall('call_b', 'clock')],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'cold' },
      { role: 'tool', tool_call_id: 'call_b', content: 'noon' },
    ],
  },
  {
    name: 'an earlier output (reasoning, message with id and status, calls) as input: reasoning dropped, the rest merged',
    body: {
      input: [
        user('Hi'),
        {
          type: 'reasoning',
          id: 'rs_1',
          summary: [{ type: 'summary_text', text: 'thinking' }],
          encrypted_content: 'xyz',
        },
        {
          id: 'msg_1',
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Sure.', annotations: [], logprobs: [] }],
        },
        { type: 'reasoning', id: 'rs_2', summary: [] },
        { ...call('call_1', 'clock'), id: 'fc_1', status: 'completed' },
        output('call_1', 'noon'),
        user('Thanks'),
      ],
    },
    messages: [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Sure.', tool_calls: [chatCall('call_1', 'clock')] },
      { role: 'tool', tool_call_id: 'call_1', content: 'noon' },
      { role: 'user', content: 'Thanks' },
    ],
  },
  {
    name: 'a call after a tool output starts a new assistant message; arguments given as an object are stringified',
    body: {
      input: [
        user('go'),
        call('c1', 'a'),
        output('c1', 'x'),
        { type: 'function_call', call_id: 'c2', name: 'b', arguments: { n: 1 } },
      ],
    },
    messages: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, tool_calls: [chatCall('c1', 'a')] },
      { role: 'tool', tool_call_id: 'c1', content: 'x' },
      { role: 'assistant', content: null, tool_calls: [chatCall('c2', 'b', '{"n":1}')] },
    ],
  },
  {
    name: 'instructions come first, then developer and system messages where they are, all as system',
    body: {
      instructions: 'Be brief.',
      input: [
        { role: 'developer', content: 'Use metric units.' },
        user('Hi'),
        {
          role: 'system',
          content: [
            { type: 'input_text', text: 'a' },
            { type: 'input_text', text: 'b' },
          ],
        },
      ],
    },
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'Use metric units.' },
      { role: 'user', content: 'Hi' },
      { role: 'system', content: 'a\nb' },
    ],
  },
  {
    name: 'images: a URL with its detail, a data URI without one, "original" detail as high',
    body: {
      input: [
        user([
          { type: 'input_text', text: 'Compare' },
          { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' },
          { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
          { type: 'input_image', image_url: 'https://example.com/b.png', detail: 'original' },
        ]),
      ],
    },
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Compare' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'image_url', image_url: { url: 'https://example.com/b.png', detail: 'high' } },
        ],
      },
    ],
  },
  {
    name: 'a tool output in parts: texts joined; images follow the run of tool messages in one user message',
    body: {
      input: [
        user('Screenshots?'),
        call('c1', 'shot'),
        call('c2', 'shot'),
        output('c1', [
          { type: 'input_text', text: 'Here ' },
          { type: 'input_text', text: 'it is.' },
          { type: 'input_image', image_url: 'https://x/1.png', detail: 'auto' },
        ]),
        output('c2', [{ type: 'input_image', image_url: 'https://x/2.png' }]),
        user('Describe them.'),
      ],
    },
    messages: [
      { role: 'user', content: 'Screenshots?' },
      { role: 'assistant', content: null, tool_calls: [chatCall('c1', 'shot'), chatCall('c2', 'shot')] },
      {
        role: 'tool',
        tool_call_id: 'c1',
        content: 'Here it is.\n[1 image from this result follow in the next user message]',
      },
      { role: 'tool', tool_call_id: 'c2', content: '[1 image from this result follow in the next user message]' },
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'https://x/1.png', detail: 'auto' } },
          { type: 'image_url', image_url: { url: 'https://x/2.png' } },
        ],
      },
      { role: 'user', content: 'Describe them.' },
    ],
  },
  {
    name: 'an assistant refusal in the history is what it said',
    body: {
      input: [user('x'), { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot.' }] }, user('ok')],
    },
    messages: [
      { role: 'user', content: 'x' },
      { role: 'assistant', content: 'I cannot.' },
      { role: 'user', content: 'ok' },
    ],
  },
  {
    name: 'history goes before the input, after the instructions; a string history entry is a user message',
    body: { instructions: 'Sys', input: [output('call_9', '42')] },
    opts: {
      history: [
        'first question',
        { type: 'message', role: 'user', content: 'Compute' },
        { id: 'fc_9', ...call('call_9', 'calc'), status: 'completed' },
      ],
    },
    messages: [
      { role: 'system', content: 'Sys' },
      { role: 'user', content: 'first question' },
      { role: 'user', content: 'Compute' },
      { role: 'assistant', content: null, tool_calls: [chatCall('call_9', 'calc')] },
      { role: 'tool', tool_call_id: 'call_9', content: '42' },
    ],
  },
  {
    name: 'item references: resolved from the history, then the store; an unknown reasoning reference is dropped',
    body: {
      input: [
        { type: 'item_reference', id: 'msg_h' },
        { type: 'item_reference', id: 'rs_gone' },
        { type: 'item_reference', id: 'msg_store' },
        user('next'),
      ],
    },
    opts: {
      history: [
        user('q'),
        { id: 'msg_h', type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'from history' }] },
      ],
      resolveItem: (id) =>
        id === 'msg_store'
          ? { id, type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'from store' }] }
          : undefined,
    },
    messages: [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'from history' },
      { role: 'assistant', content: 'from history' },
      { role: 'assistant', content: 'from store' },
      { role: 'user', content: 'next' },
    ],
  },
  {
    name: 'function tools go nested; description and strict only as given; tool_choice and parallel_tool_calls carried',
    body: {
      input: 'x',
      tools: [weather, clock, { type: 'function', name: 'bare', description: '' }],
      tool_choice: 'required',
      parallel_tool_calls: false,
    },
    fields: {
      tools: [
        {
          type: 'function',
          function: { name: 'weather', description: 'Weather in a city', parameters: weather.parameters },
        },
        { type: 'function', function: { name: 'clock', parameters: clock.parameters, strict: true } },
        { type: 'function', function: { name: 'bare' } },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
    },
  },
  {
    name: 'tool_choice naming a function',
    body: { input: 'x', tools: [weather, clock], tool_choice: { type: 'function', name: 'clock' } },
    fields: { tool_choice: { type: 'function', function: { name: 'clock' } } },
  },
  {
    name: 'tool_choice allowed_tools keeps only those tools, its mode the choice',
    body: {
      input: 'x',
      tools: [weather, clock],
      tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'clock' }] },
    },
    fields: {
      tools: [{ type: 'function', function: { name: 'clock', parameters: clock.parameters, strict: true } }],
      tool_choice: 'required',
    },
  },
  {
    name: 'without tools, tool_choice and parallel_tool_calls are left out (OpenAI-style servers refuse them alone)',
    body: { input: 'x', tools: [], tool_choice: 'auto', parallel_tool_calls: true },
    absent: ['tools', 'tool_choice', 'parallel_tool_calls'],
  },
  {
    name: 'max_output_tokens is max_tokens; temperature, top_p and user are copied',
    body: { input: 'x', max_output_tokens: 256, temperature: 0.3, top_p: 0.9, user: 'end-user-7' },
    fields: { max_tokens: 256, temperature: 0.3, top_p: 0.9, user: 'end-user-7' },
  },
  {
    name: 'what changes nothing for the backend, or another module handles, is not forwarded; unknown fields are dropped',
    body: {
      input: 'x',
      metadata: { a: '1' },
      store: true,
      background: true,
      previous_response_id: 'resp_1',
      include: ['reasoning.encrypted_content'],
      truncation: 'auto',
      service_tier: 'flex',
      prompt_cache_key: 'k',
      prompt_cache_retention: '24h',
      safety_identifier: 's',
      reasoning: { effort: 'high' },
      stream_options: { include_obfuscation: false },
      top_logprobs: 3,
      max_tool_calls: 2,
      some_future_field: { x: 1 },
    },
    absent: [
      'metadata',
      'store',
      'background',
      'previous_response_id',
      'include',
      'truncation',
      'service_tier',
      'prompt_cache_key',
      'prompt_cache_retention',
      'safety_identifier',
      'reasoning',
      'reasoning_effort',
      'stream_options',
      'top_logprobs',
      'logprobs',
      'max_tool_calls',
      'some_future_field',
    ],
  },
  {
    name: 'text.format json_schema is response_format json_schema',
    body: {
      input: 'x',
      text: {
        format: {
          type: 'json_schema',
          name: 'person',
          schema: { type: 'object', properties: { name: { type: 'string' } } },
          strict: true,
          description: 'A person',
        },
        verbosity: 'low',
      },
    },
    fields: {
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'person',
          schema: { type: 'object', properties: { name: { type: 'string' } } },
          strict: true,
          description: 'A person',
        },
      },
    },
  },
  {
    name: 'text.format json_object is response_format json_object',
    body: { input: 'x', text: { format: { type: 'json_object' } } },
    fields: { response_format: { type: 'json_object' } },
  },
  {
    name: 'text.format text is the default: no response_format',
    body: { input: 'x', text: { format: { type: 'text' } } },
    absent: ['response_format'],
  },
  {
    name: 'a stream asks for the usage chunk',
    body: { input: 'x', stream: true },
    opts: { stream: true },
    fields: { stream: true, stream_options: { include_usage: true } },
  },
];

for (const c of CASES) {
  test(`request: ${c.name}`, () => {
    const chat = chatOf(c.body, c.opts);
    if (c.messages) assert.deepEqual(chat.messages, c.messages);
    for (const [field, want] of Object.entries(c.fields ?? {})) assert.deepEqual(chat[field], want, field);
    for (const field of c.absent ?? []) assert.ok(!(field in chat), `${field} is absent`);
  });
}

interface ErrorCase {
  name: string;
  body: Body;
  opts?: Partial<ResponsesToChatOptions>;
  param: string;
  /** A fragment the message must contain. */
  says?: RegExp;
}

const BUILT_IN_TOOLS = [
  'web_search',
  'web_search_preview',
  'file_search',
  'computer_use_preview',
  'code_interpreter',
  'image_generation',
  'mcp',
  'local_shell',
  'custom',
  'shell',
  'apply_patch',
];

const ERRORS: ErrorCase[] = [
  { name: 'input missing', body: {}, param: 'input', says: /required/ },
  { name: 'input of the wrong type', body: { input: 42 }, param: 'input' },
  { name: 'an empty conversation', body: { input: [] }, param: 'input' },
  { name: 'an item that is not an object', body: { input: ['hi'] }, param: 'input[0]' },
  {
    name: 'an item of unknown type',
    body: { input: [{ type: 'telepathy' }] },
    param: 'input[0].type',
    says: /telepathy/,
  },
  { name: 'an item without type or role', body: { input: [{ content: 'x' }] }, param: 'input[0].type' },
  {
    name: 'a function_call without call_id',
    body: { input: [user('x'), { type: 'function_call', name: 'f', arguments: '{}' }] },
    param: 'input[1].call_id',
  },
  {
    name: 'a function_call without name',
    body: { input: [{ type: 'function_call', call_id: 'c', arguments: '{}' }] },
    param: 'input[0].name',
  },
  {
    name: 'a function_call without arguments',
    body: { input: [{ type: 'function_call', call_id: 'c', name: 'f' }] },
    param: 'input[0].arguments',
  },
  {
    name: 'a function_call_output without call_id',
    body: { input: [{ type: 'function_call_output', output: 'x' }] },
    param: 'input[0].call_id',
  },
  {
    name: 'a function_call_output without output',
    body: { input: [{ type: 'function_call_output', call_id: 'c' }] },
    param: 'input[0].output',
  },
  {
    name: 'a message with an unknown role',
    body: { input: [{ role: 'narrator', content: 'x' }] },
    param: 'input[0].role',
  },
  { name: 'a message without content', body: { input: [{ role: 'user' }] }, param: 'input[0].content' },
  {
    name: 'a part of unknown type',
    body: { input: [user([{ type: 'input_hologram' }])] },
    param: 'input[0].content[0].type',
  },
  {
    name: 'a part that is not text',
    body: { input: [user([{ type: 'input_text', text: 7 }])] },
    param: 'input[0].content[0].text',
  },
  {
    name: 'an image by file_id',
    body: { input: [user([{ type: 'input_image', file_id: 'file-abc', detail: 'auto' }])] },
    param: 'input[0].content[0].file_id',
    says: /Files API/,
  },
  {
    name: 'an image without a URL',
    body: { input: [user([{ type: 'input_image', detail: 'auto' }])] },
    param: 'input[0].content[0].image_url',
  },
  {
    name: 'an image with an unknown detail',
    body: { input: [user([{ type: 'input_image', image_url: 'https://x/a.png', detail: 'ultra' }])] },
    param: 'input[0].content[0].detail',
  },
  {
    name: 'a file',
    body: { input: [user([{ type: 'input_file', file_data: 'data:application/pdf;base64,AA==', filename: 'a.pdf' }])] },
    param: 'input[0].content[0].type',
    says: /input_file/,
  },
  {
    name: 'an image in a system message',
    body: { input: [{ role: 'system', content: [{ type: 'input_image', image_url: 'https://x/a.png' }] }] },
    param: 'input[0].content[0].type',
  },
  {
    name: 'a file in a tool output',
    body: { input: [output('c', [{ type: 'input_file', file_id: 'file-1' }])] },
    param: 'input[0].output[0].type',
  },
  {
    name: 'an item of a built-in tool',
    body: { input: [{ type: 'web_search_call', id: 'ws_1', status: 'completed' }] },
    param: 'input[0].type',
    says: /web_search_call/,
  },
  {
    name: 'an OpenAI compaction item',
    body: { input: [{ type: 'compaction', encrypted_content: 'x' }] },
    param: 'input[0].type',
  },
  {
    name: 'a reference nobody can resolve',
    body: { input: [{ type: 'item_reference', id: 'msg_unknown' }] },
    param: 'input[0].id',
    says: /store/,
  },
  { name: 'a reference without id', body: { input: [{ type: 'item_reference' }] }, param: 'input[0].id' },
  ...BUILT_IN_TOOLS.map((type): ErrorCase => ({
    name: `a "${type}" tool`,
    body: { input: 'x', tools: [weather, { type }] },
    param: 'tools[1].type',
    says: new RegExp(`"${type}"`),
  })),
  { name: 'tools that are not an array', body: { input: 'x', tools: {} }, param: 'tools' },
  {
    name: 'a function tool without a name',
    body: { input: 'x', tools: [{ type: 'function', parameters: {} }] },
    param: 'tools[0].name',
  },
  {
    name: 'two tools of one name',
    body: { input: 'x', tools: [weather, weather] },
    param: 'tools[1].name',
    says: /unique/,
  },
  {
    name: 'parameters that are not a schema object',
    body: { input: 'x', tools: [{ type: 'function', name: 'f', parameters: 'none' }] },
    param: 'tools[0].parameters',
  },
  {
    name: 'a tool_choice naming a built-in tool',
    body: { input: 'x', tools: [weather], tool_choice: { type: 'web_search_preview' } },
    param: 'tool_choice.type',
    says: /web_search_preview/,
  },
  {
    name: 'a tool_choice for MCP',
    body: { input: 'x', tools: [weather], tool_choice: { type: 'mcp', server_label: 's' } },
    param: 'tool_choice.type',
  },
  {
    name: 'a tool_choice naming no tool',
    body: { input: 'x', tools: [weather], tool_choice: { type: 'function', name: 'nope' } },
    param: 'tool_choice.name',
  },
  {
    name: 'a tool_choice string unknown',
    body: { input: 'x', tools: [weather], tool_choice: 'sometimes' },
    param: 'tool_choice',
  },
  {
    name: 'allowed_tools with a built-in tool',
    body: {
      input: 'x',
      tools: [weather],
      tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'file_search' }] },
    },
    param: 'tool_choice.tools[0].type',
  },
  {
    name: 'parallel_tool_calls not a boolean',
    body: { input: 'x', tools: [weather], parallel_tool_calls: 'yes' },
    param: 'parallel_tool_calls',
  },
  { name: 'max_output_tokens zero', body: { input: 'x', max_output_tokens: 0 }, param: 'max_output_tokens' },
  { name: 'temperature not a number', body: { input: 'x', temperature: 'hot' }, param: 'temperature' },
  { name: 'user not a string', body: { input: 'x', user: 7 }, param: 'user' },
  { name: 'instructions not a string', body: { input: 'x', instructions: ['a'] }, param: 'instructions' },
  {
    name: 'a json_schema format without name',
    body: { input: 'x', text: { format: { type: 'json_schema', schema: {} } } },
    param: 'text.format.name',
  },
  {
    name: 'a json_schema format without schema',
    body: { input: 'x', text: { format: { type: 'json_schema', name: 'n' } } },
    param: 'text.format.schema',
  },
  {
    name: 'a text format of unknown type',
    body: { input: 'x', text: { format: { type: 'yaml' } } },
    param: 'text.format.type',
  },
  { name: 'a stored prompt', body: { input: 'x', prompt: { id: 'pmpt_1' } }, param: 'prompt' },
  { name: 'an OpenAI conversation', body: { input: 'x', conversation: 'conv_1' }, param: 'conversation' },
  {
    name: 'a stored item the bridge cannot use',
    body: { input: 'x' },
    opts: { history: [{ type: 'web_search_call' }] },
    param: 'previous_response_id',
    says: /stored/,
  },
];

for (const c of ERRORS) {
  test(`request 400: ${c.name} names ${c.param}`, () => {
    const result = responsesToChat(c.body, { ...OPTS, ...c.opts });
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.equal(result.error.status, 400);
    assert.equal(result.error.param, c.param);
    assert.ok(result.error.message.startsWith(`${c.param}: `), result.error.message);
    assert.equal(typeof result.error.code, 'string');
    if (c.says) assert.match(result.error.message, c.says);
  });
}

test('request: the body is not changed by the translation', () => {
  const body = {
    input: [user('x'), call('c', 'f'), output('c', 'y')],
    tools: [weather],
    text: { format: { type: 'json_object' } },
  };
  const before = structuredClone(body);
  const chat = chatOf(body);
  chat.messages[0].content = 'changed';
  assert.deepEqual(body, before);
});
