/**
 * The request translation on what Claude Code actually sends: system blocks with cache
 * breakpoints, reminders among the messages (one of them last), several tools with JSON
 * schemas, a tool round trip whose result is an error, adaptive thinking, and fields that
 * have no chat equivalent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { messagesToChat } from '../src/bridges/anthropic/request.ts';
import { TOOL_ERROR_PREFIX } from '../src/bridges/anthropic/request-messages.ts';

type Body = Record<string, unknown>;
const OPTS = { model: 'qwen3-coder', stream: false, promptCache: false };
const translate = (body: Body, opts: Partial<typeof OPTS> = {}) => messagesToChat(body, { ...OPTS, ...opts });
function chatOf(body: Body, opts: Partial<typeof OPTS> = {}): Record<string, any> {
  const result = translate(body, opts);
  if (!result.ok) assert.fail(`expected a translation, got ${result.error.status} ${result.error.message}`);
  return result.chat;
}
const user = (content: unknown) => ({ role: 'user', content });
const assistant = (content: unknown) => ({ role: 'assistant', content });
const ephemeral = { type: 'ephemeral' };

/** A body shaped like Claude Code's. */
function claudeCodeBody(): Body {
  const schema = (props: Record<string, unknown>, required: string[]) => ({
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    properties: props,
    required,
    additionalProperties: false,
  });
  return {
    model: 'claude-sonnet-4-5-20250929',
    max_tokens: 32000,
    stream: true,
    temperature: 1,
    metadata: { user_id: 'user_0123_account__session_abc' },
    thinking: { type: 'adaptive' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    system: [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: ephemeral },
      {
        type: 'text',
        text: 'You are an interactive CLI tool that helps users with software engineering tasks.',
        cache_control: ephemeral,
      },
    ],
    tools: [
      {
        name: 'Bash',
        description: 'Executes a bash command',
        input_schema: schema({ command: { type: 'string' } }, ['command']),
      },
      {
        name: 'Read',
        description: 'Reads a file',
        input_schema: schema({ file_path: { type: 'string' } }, ['file_path']),
      },
      {
        name: 'Edit',
        description: 'Edits a file',
        input_schema: schema(
          { file_path: { type: 'string' }, old_string: { type: 'string' }, new_string: { type: 'string' } },
          ['file_path', 'old_string', 'new_string'],
        ),
      },
      {
        name: 'Grep',
        description: 'Searches files',
        input_schema: schema({ pattern: { type: 'string' } }, ['pattern']),
      },
    ],
    messages: [
      user([
        { type: 'text', text: '<system-reminder>\nAs you answer, use the context.\n</system-reminder>' },
        { type: 'text', text: 'Fix the failing test' },
      ]),
      assistant([
        { type: 'thinking', thinking: 'Run the tests first.', signature: 'EqQBCkYIBxgCKkA' },
        { type: 'text', text: 'Running the tests.' },
        { type: 'tool_use', id: 'toolu_01A', name: 'Bash', input: { command: 'npm test' } },
      ]),
      user([
        { type: 'tool_result', tool_use_id: 'toolu_01A', is_error: true, content: 'Exit code 1\nFAIL test/a.test.ts' },
        { type: 'text', text: 'Please look at test/a.test.ts', cache_control: ephemeral },
      ]),
      { role: 'system', content: 'The user is on macOS.' },
    ],
  };
}

test('request: a Claude Code body, without prompt caching', () => {
  const result = translate(claudeCodeBody(), { stream: true });
  assert.ok(result.ok);
  assert.deepEqual(result.reasoning, { mode: 'on' });
  const chat = result.chat as Record<string, any>;
  assert.deepEqual(Object.keys(chat).sort(), [
    'max_tokens',
    'messages',
    'model',
    'stream',
    'stream_options',
    'temperature',
    'tools',
    'user',
  ]);
  assert.deepEqual(chat.messages, [
    {
      role: 'system',
      content:
        "You are Claude Code, Anthropic's official CLI for Claude.\n\nYou are an interactive CLI tool that helps users with software engineering tasks.",
    },
    {
      role: 'user',
      content: [
        { type: 'text', text: '<system-reminder>\nAs you answer, use the context.\n</system-reminder>' },
        { type: 'text', text: 'Fix the failing test' },
      ],
    },
    {
      role: 'assistant',
      content: 'Running the tests.',
      tool_calls: [
        { id: 'toolu_01A', type: 'function', function: { name: 'Bash', arguments: '{"command":"npm test"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'toolu_01A', content: `${TOOL_ERROR_PREFIX}Exit code 1\nFAIL test/a.test.ts` },
    { role: 'user', content: 'Please look at test/a.test.ts' },
    { role: 'system', content: 'The user is on macOS.' },
  ]);
  assert.deepEqual(
    chat.tools.map((t: any) => t.function.name),
    ['Bash', 'Read', 'Edit', 'Grep'],
  );
  assert.deepEqual(
    chat.tools[2].function.parameters,
    (claudeCodeBody().tools as any)[2].input_schema,
    'the schema passes as it is',
  );
  assert.equal(chat.user, 'user_0123_account__session_abc');
  assert.equal(chat.model, 'qwen3-coder');
});

test('request: a Claude Code body, with prompt caching, keeps every breakpoint on its part', () => {
  const chat = chatOf(claudeCodeBody(), { stream: true, promptCache: true });
  assert.deepEqual(chat.messages[0], {
    role: 'system',
    content: [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: ephemeral },
      {
        type: 'text',
        text: 'You are an interactive CLI tool that helps users with software engineering tasks.',
        cache_control: ephemeral,
      },
    ],
  });
  assert.deepEqual(chat.messages[4], {
    role: 'user',
    content: [{ type: 'text', text: 'Please look at test/a.test.ts', cache_control: ephemeral }],
  });
  assert.equal(
    chat.messages[3].content,
    `${TOOL_ERROR_PREFIX}Exit code 1\nFAIL test/a.test.ts`,
    'a result without a breakpoint stays a string',
  );
});

test('request: the input body is not modified', () => {
  const body = claudeCodeBody();
  const before = JSON.stringify(body);
  chatOf(body, { promptCache: true });
  chatOf(body);
  assert.equal(JSON.stringify(body), before);
});
