import { test } from 'node:test';
import assert from 'node:assert/strict';
import { messagesToChat, type MessagesToChat } from '../src/bridges/anthropic/request.ts';
import { TOOL_ERROR_PREFIX } from '../src/bridges/anthropic/request-messages.ts';

type Body = Record<string, unknown>;
const OPTS = { model: 'qwen3-coder', stream: false, promptCache: false };

function translate(body: Body, opts: Partial<typeof OPTS> = {}): MessagesToChat {
  return messagesToChat(body, { ...OPTS, ...opts });
}

function chatOf(body: Body, opts: Partial<typeof OPTS> = {}): Record<string, any> {
  const result = translate(body, opts);
  if (!result.ok) assert.fail(`expected a translation, got ${result.error.status} ${result.error.message}`);
  return result.chat;
}

/** A body with the required fields around `messages`. */
function withMessages(messages: unknown[], extra: Body = {}): Body {
  return { model: 'claude-sonnet-4-5', max_tokens: 1024, messages, ...extra };
}

const user = (content: unknown) => ({ role: 'user', content });
const assistant = (content: unknown) => ({ role: 'assistant', content });
const tool = (name: string) => ({
  name,
  description: `the ${name} tool`,
  input_schema: { type: 'object', properties: { x: { type: 'string' } } },
});
const png = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
const pngPart = { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } };
const ephemeral = { type: 'ephemeral' };

interface Case {
  name: string;
  body: Body;
  opts?: Partial<typeof OPTS>;
  /** Expected `messages` of the chat body. */
  messages?: unknown[];
  /** Expected fields of the chat body besides `messages` (each compared deeply). */
  fields?: Record<string, unknown>;
  /** Fields that must be absent from the chat body. */
  absent?: string[];
}

const CASES: Case[] = [
  {
    name: 'a single text becomes a plain string; model and max_tokens are set',
    body: withMessages([user('Hello')]),
    messages: [{ role: 'user', content: 'Hello' }],
    fields: { model: 'qwen3-coder', max_tokens: 1024 },
    absent: ['stream', 'stream_options', 'tools', 'tool_choice', 'stop', 'user'],
  },
  {
    name: 'one text block is a plain string too',
    body: withMessages([user([{ type: 'text', text: 'Hello' }])]),
    messages: [{ role: 'user', content: 'Hello' }],
  },
  {
    name: 'a string system prompt comes first',
    body: withMessages([user('Hi')], { system: 'Be brief.' }),
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ],
  },
  {
    name: 'system text blocks are joined as paragraphs; cache_control is dropped without prompt caching',
    body: withMessages([user('Hi')], {
      system: [
        { type: 'text', text: 'You are Claude Code.' },
        { type: 'text', text: 'Use tools.', cache_control: ephemeral },
      ],
    }),
    messages: [
      { role: 'system', content: 'You are Claude Code.\n\nUse tools.' },
      { role: 'user', content: 'Hi' },
    ],
  },
  {
    name: 'with prompt caching, system blocks become parts and keep their breakpoints',
    body: withMessages([user([{ type: 'text', text: 'Hi', cache_control: ephemeral }])], {
      system: [
        { type: 'text', text: 'You are Claude Code.' },
        { type: 'text', text: 'Use tools.', cache_control: ephemeral },
      ],
    }),
    opts: { promptCache: true },
    messages: [
      {
        role: 'system',
        content: [
          { type: 'text', text: 'You are Claude Code.' },
          { type: 'text', text: 'Use tools.', cache_control: ephemeral },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: ephemeral }] },
    ],
  },
  {
    name: 'an empty system string adds no message',
    body: withMessages([user('Hi')], { system: '' }),
    messages: [{ role: 'user', content: 'Hi' }],
  },
  {
    name: 'role:"system" inside messages stays in place, also as the last message, as a string or blocks',
    body: withMessages([
      user('Hi'),
      { role: 'system', content: 'reminder one' },
      assistant('Hello'),
      {
        role: 'system',
        content: [
          { type: 'text', text: 'reminder' },
          { type: 'text', text: 'two' },
        ],
      },
    ]),
    messages: [
      { role: 'user', content: 'Hi' },
      { role: 'system', content: 'reminder one' },
      { role: 'assistant', content: 'Hello' },
      { role: 'system', content: 'reminder\n\ntwo' },
    ],
  },
  {
    name: 'text and images become content parts (base64 as a data URL, url as is)',
    body: withMessages([
      user([
        { type: 'text', text: 'What is this?' },
        png,
        { type: 'image', source: { type: 'url', url: 'https://example.test/cat.jpg' } },
      ]),
    ]),
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          pngPart,
          { type: 'image_url', image_url: { url: 'https://example.test/cat.jpg' } },
        ],
      },
    ],
  },
  {
    name: 'two text blocks stay two parts',
    body: withMessages([
      user([
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ]),
    ]),
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
    ],
  },
  {
    name: 'a text document becomes text, headed by its title',
    body: withMessages([
      user([
        { type: 'document', title: 'notes.txt', source: { type: 'text', media_type: 'text/plain', data: 'line 1' } },
        { type: 'text', text: 'Summarise' },
      ]),
    ]),
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'notes.txt\n\nline 1' },
          { type: 'text', text: 'Summarise' },
        ],
      },
    ],
  },
  {
    name: 'assistant tool_use blocks become tool_calls in order, text as content; thinking is dropped',
    body: withMessages(
      [
        user('Weather in Paris and Rome?'),
        assistant([
          { type: 'thinking', thinking: 'Two cities.', signature: 'sig' },
          { type: 'redacted_thinking', data: 'xyz' },
          { type: 'text', text: 'Checking both.' },
          { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_2', name: 'weather', input: { city: 'Rome' } },
        ]),
        user([
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: '24C' }] },
        ]),
      ],
      { tools: [tool('weather')] },
    ),
    messages: [
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Checking both.',
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: '18C' },
      { role: 'tool', tool_call_id: 'toolu_2', content: '24C' },
    ],
  },
  {
    name: 'a tool_use turn without text has null content; an assistant turn of only thinking is dropped',
    body: withMessages(
      [
        user('go'),
        assistant([{ type: 'tool_use', id: 'toolu_9', name: 'run', input: {} }]),
        user([{ type: 'tool_result', tool_use_id: 'toolu_9' }]),
        assistant([{ type: 'thinking', thinking: 'hmm', signature: '' }]),
        user('again'),
      ],
      { tools: [tool('run')] },
    ),
    messages: [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'toolu_9', type: 'function', function: { name: 'run', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'toolu_9', content: '' },
      { role: 'user', content: 'again' },
    ],
  },
  {
    name: 'tool results come before the rest of the user turn, error results are marked, images follow in a user message',
    body: withMessages(
      [
        user('Read both'),
        assistant([
          { type: 'tool_use', id: 'toolu_a', name: 'read', input: { path: 'a.png' } },
          { type: 'tool_use', id: 'toolu_b', name: 'read', input: { path: 'b' } },
        ]),
        user([
          { type: 'text', text: 'Here you go' },
          { type: 'tool_result', tool_use_id: 'toolu_a', content: [{ type: 'text', text: 'an image' }, png] },
          { type: 'tool_result', tool_use_id: 'toolu_b', is_error: true, content: 'ENOENT: no such file' },
        ]),
      ],
      { tools: [tool('read')] },
    ),
    messages: [
      { role: 'user', content: 'Read both' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'toolu_a', type: 'function', function: { name: 'read', arguments: '{"path":"a.png"}' } },
          { id: 'toolu_b', type: 'function', function: { name: 'read', arguments: '{"path":"b"}' } },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'toolu_a',
        content: 'an image\n[1 image from this result follow in the next user message]',
      },
      { role: 'tool', tool_call_id: 'toolu_b', content: `${TOOL_ERROR_PREFIX}ENOENT: no such file` },
      { role: 'user', content: [pngPart, { type: 'text', text: 'Here you go' }] },
    ],
  },
  {
    name: 'an error result without text is the marker alone',
    body: withMessages([user([{ type: 'tool_result', tool_use_id: 'toolu_x', is_error: true }])]),
    messages: [{ role: 'tool', tool_call_id: 'toolu_x', content: TOOL_ERROR_PREFIX.trimEnd() }],
  },
  {
    name: 'with prompt caching, a breakpoint on a tool_result rides on its last text part',
    body: withMessages([
      user([{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'done', cache_control: ephemeral }]),
    ]),
    opts: { promptCache: true },
    messages: [
      { role: 'tool', tool_call_id: 'toolu_x', content: [{ type: 'text', text: 'done', cache_control: ephemeral }] },
    ],
  },
  {
    name: 'tools become functions; tool_choice auto',
    body: withMessages([user('x')], { tools: [tool('a'), tool('b'), tool('c')], tool_choice: { type: 'auto' } }),
    fields: {
      tools: ['a', 'b', 'c'].map((name) => ({
        type: 'function',
        function: {
          name,
          description: `the ${name} tool`,
          parameters: { type: 'object', properties: { x: { type: 'string' } } },
        },
      })),
      tool_choice: 'auto',
    },
    absent: ['parallel_tool_calls'],
  },
  {
    name: 'tool_choice any is required, and disable_parallel_tool_use turns parallel calls off',
    body: withMessages([user('x')], {
      tools: [tool('a')],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
    }),
    fields: { tool_choice: 'required', parallel_tool_calls: false },
  },
  {
    name: 'tool_choice tool names the function',
    body: withMessages([user('x')], { tools: [tool('a'), tool('b')], tool_choice: { type: 'tool', name: 'b' } }),
    fields: { tool_choice: { type: 'function', function: { name: 'b' } } },
  },
  {
    name: 'tool_choice none',
    body: withMessages([user('x')], { tools: [tool('a')], tool_choice: { type: 'none' } }),
    fields: { tool_choice: 'none' },
  },
  {
    name: 'a tool_choice without tools is dropped',
    body: withMessages([user('x')], { tool_choice: { type: 'auto', disable_parallel_tool_use: true } }),
    absent: ['tools', 'tool_choice', 'parallel_tool_calls'],
  },
  {
    name: 'sampling, stop sequences and the end user carry over',
    body: withMessages([user('x')], {
      stop_sequences: ['END', '\n\nHuman:'],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      metadata: { user_id: 'user_abc' },
    }),
    fields: { stop: ['END', '\n\nHuman:'], temperature: 0.2, top_p: 0.9, top_k: 40, user: 'user_abc' },
  },
  {
    name: 'a streamed call asks for the usage chunk',
    body: withMessages([user('x')], { stream: true }),
    opts: { stream: true },
    fields: { stream: true, stream_options: { include_usage: true } },
  },
  {
    name: 'fields without a chat equivalent are dropped',
    body: withMessages([user('x')], {
      context_management: { edits: [] },
      betas: ['x'],
      service_tier: 'auto',
      container: 'c',
      mcp_servers: [],
      cache_control: ephemeral,
      thinking: { type: 'adaptive' },
      output_config: { effort: 'high' },
    }),
    absent: [
      'context_management',
      'betas',
      'service_tier',
      'container',
      'mcp_servers',
      'cache_control',
      'thinking',
      'output_config',
      'reasoning',
      'reasoning_effort',
    ],
  },
];

for (const c of CASES) {
  test(`request: ${c.name}`, () => {
    const chat = chatOf(c.body, c.opts);
    if (c.messages) assert.deepEqual(chat.messages, c.messages);
    for (const [key, value] of Object.entries(c.fields ?? {})) assert.deepEqual(chat[key], value, key);
    for (const key of c.absent ?? []) assert.equal(Object.hasOwn(chat, key), false, `${key} must not be sent`);
  });
}

const REASONING: { name: string; extra: Body; intent: unknown }[] = [
  { name: 'no thinking asked', extra: {}, intent: undefined },
  {
    name: 'enabled with a budget',
    extra: { thinking: { type: 'enabled', budget_tokens: 2048 } },
    intent: { mode: 'on', budgetTokens: 2048 },
  },
  { name: 'adaptive', extra: { thinking: { type: 'adaptive' } }, intent: { mode: 'on' } },
  { name: 'disabled', extra: { thinking: { type: 'disabled' } }, intent: { mode: 'off' } },
  {
    name: 'effort wins over adaptive',
    extra: { thinking: { type: 'adaptive' }, output_config: { effort: 'low' } },
    intent: { mode: 'effort', effort: 'low' },
  },
  { name: 'effort alone', extra: { output_config: { effort: 'max' } }, intent: { mode: 'effort', effort: 'max' } },
  {
    name: 'disabled wins over effort',
    extra: { thinking: { type: 'disabled' }, output_config: { effort: 'high' } },
    intent: { mode: 'off' },
  },
  {
    name: 'an explicit budget wins over effort',
    extra: { thinking: { type: 'enabled', budget_tokens: 4096 }, output_config: { effort: 'low' } },
    intent: { mode: 'on', budgetTokens: 4096 },
  },
];

for (const c of REASONING) {
  test(`request reasoning: ${c.name}`, () => {
    const result = translate(withMessages([user('x')], c.extra));
    assert.ok(result.ok);
    assert.deepEqual(result.reasoning, c.intent);
    const keys = Object.keys(result.chat);
    assert.ok(
      !keys.some((k) => /reason|think|effort|output_config/.test(k)),
      `no reasoning field in the chat body: ${keys.join(', ')}`,
    );
  });
}

const SERVER_TOOLS = [
  'web_search_20250305',
  'bash_20250124',
  'text_editor_20250728',
  'computer_20250124',
  'code_execution_20250522',
  'web_fetch_20250910',
];

interface Failure {
  name: string;
  body: Body;
  param: string;
  /** A part of the message that must be there. */
  says?: RegExp;
}

const FAILURES: Failure[] = [
  { name: 'messages missing', body: { max_tokens: 10 }, param: 'messages' },
  { name: 'messages not an array', body: { max_tokens: 10, messages: 'hi' }, param: 'messages' },
  { name: 'messages empty', body: { max_tokens: 10, messages: [] }, param: 'messages' },
  { name: 'max_tokens missing', body: { messages: [user('x')] }, param: 'max_tokens', says: /required/ },
  {
    name: 'max_tokens zero',
    body: { max_tokens: 0, messages: [user('x')] },
    param: 'max_tokens',
    says: /positive integer/,
  },
  { name: 'max_tokens fractional', body: { max_tokens: 1.5, messages: [user('x')] }, param: 'max_tokens' },
  { name: 'max_tokens a string', body: { max_tokens: '100', messages: [user('x')] }, param: 'max_tokens' },
  { name: 'unknown role', body: withMessages([{ role: 'tool', content: 'x' }]), param: 'messages.0.role' },
  { name: 'message without content', body: withMessages([{ role: 'user' }]), param: 'messages.0.content' },
  {
    name: 'a block of unknown type',
    body: withMessages([user([{ type: 'text', text: 'a' }, { type: 'hologram' }])]),
    param: 'messages.0.content.1.type',
    says: /hologram/,
  },
  { name: 'a block without type', body: withMessages([user([{ text: 'a' }])]), param: 'messages.0.content.0.type' },
  {
    name: 'text that is not a string',
    body: withMessages([user([{ type: 'text', text: 5 }])]),
    param: 'messages.0.content.0.text',
  },
  {
    name: 'a server tool block in the history',
    body: withMessages([
      user('x'),
      assistant([{ type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }]),
    ]),
    param: 'messages.1.content.0.type',
    says: /server tools/,
  },
  {
    name: 'an image from the Files API',
    body: withMessages([user([{ type: 'image', source: { type: 'file', file_id: 'file_1' } }])]),
    param: 'messages.0.content.0.source.type',
  },
  {
    name: 'a PDF document',
    body: withMessages([
      user([{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }]),
    ]),
    param: 'messages.0.content.0.source.type',
    says: /"document"/,
  },
  {
    name: 'tool_use without a name',
    body: withMessages([assistant([{ type: 'tool_use', id: 'toolu_1', input: {} }])]),
    param: 'messages.0.content.0.name',
  },
  {
    name: 'tool_result without tool_use_id',
    body: withMessages([user([{ type: 'tool_result', content: 'x' }])]),
    param: 'messages.0.content.0.tool_use_id',
  },
  {
    name: 'tool without name',
    body: withMessages([user('x')], { tools: [{ input_schema: { type: 'object' } }] }),
    param: 'tools.0.name',
  },
  {
    name: 'tool without input_schema',
    body: withMessages([user('x')], { tools: [{ name: 'a' }] }),
    param: 'tools.0.input_schema',
  },
  {
    name: 'duplicate tool names',
    body: withMessages([user('x')], { tools: [tool('a'), tool('a')] }),
    param: 'tools.1.name',
  },
  { name: 'tools not an array', body: withMessages([user('x')], { tools: {} }), param: 'tools' },
  {
    name: 'tool_choice of an unknown tool',
    body: withMessages([user('x')], { tools: [tool('a')], tool_choice: { type: 'tool', name: 'b' } }),
    param: 'tool_choice.name',
  },
  {
    name: 'tool_choice of an unknown type',
    body: withMessages([user('x')], { tools: [tool('a')], tool_choice: { type: 'sometimes' } }),
    param: 'tool_choice.type',
  },
  { name: 'temperature a string', body: withMessages([user('x')], { temperature: 'hot' }), param: 'temperature' },
  { name: 'top_k fractional', body: withMessages([user('x')], { top_k: 1.5 }), param: 'top_k' },
  {
    name: 'stop_sequences with a number',
    body: withMessages([user('x')], { stop_sequences: ['a', 1] }),
    param: 'stop_sequences.1',
  },
  {
    name: 'thinking of an unknown type',
    body: withMessages([user('x')], { thinking: { type: 'maybe' } }),
    param: 'thinking.type',
  },
  {
    name: 'thinking budget not a number',
    body: withMessages([user('x')], { thinking: { type: 'enabled', budget_tokens: 'lots' } }),
    param: 'thinking.budget_tokens',
  },
  { name: 'system of image blocks', body: withMessages([user('x')], { system: [png] }), param: 'system.0.type' },
  ...SERVER_TOOLS.map((type) => ({
    name: `server tool ${type}`,
    body: withMessages([user('x')], { tools: [tool('a'), { type, name: type.replace(/_\d+$/, '') }] }),
    param: 'tools.1.type',
    says: new RegExp(`"${type.replace(/_\d+$/, '')}" \\("${type}"\\)`),
  })),
];

for (const c of FAILURES) {
  test(`request 400: ${c.name}`, () => {
    const result = translate(c.body);
    if (result.ok) assert.fail('expected a 400');
    assert.equal(result.error.status, 400);
    assert.equal(result.error.param, c.param);
    assert.ok(result.error.message.startsWith(`${c.param}: `), `the message names the field: ${result.error.message}`);
    if (c.says) assert.match(result.error.message, c.says);
  });
}
