/**
 * reasoningEdits: each mechanism on and off, on chat and completions, applied with
 * editTopLevel to raw bodies with odd spacing, checking the exact bytes that come out (so every
 * member the switch does not need keeps the client's bytes: big integers, spacing, order).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { clampEffort, effortForBudget, reasoningEdits } from '../src/bridges/reasoning/apply.ts';
import type { ReasoningRule, ReasoningWant } from '../src/config/reasoning-types.ts';
import { editTopLevel } from '../src/wire/raw-json.ts';

const OFF: ReasoningWant = { value: 'off' };
const ON: ReasoningWant = { value: 'on' };

function run(
  raw: string,
  kind: 'chat' | 'completions',
  want: ReasoningWant | undefined,
  rule: ReasoningRule | undefined,
  strip = false,
) {
  const { edits, applied } = reasoningEdits(JSON.parse(raw), kind, want, rule, strip);
  const out = editTopLevel(raw, edits);
  JSON.parse(out);
  return { out, applied, edits };
}

// odd spacing, a big integer, a number literal JSON.parse would reformat
const CHAT =
  '{ "model" : "q",\n  "messages":[ {"role":"system","content":"be brief"},{"role":"user","content":"hi"} ],\n  "seed": 12345678901234567891, "temperature" :0.60 }';
const TAIL = '"seed": 12345678901234567891, "temperature" :0.60';
const MSGS = '[ {"role":"system","content":"be brief"},{"role":"user","content":"hi"} ]';
const COMPLETION = '{"model":"q" ,  "prompt" : "Once upon",\t"max_tokens":1e2}';

/** CHAT with members appended before the closing brace, as editTopLevel appends them. */
const chatPlus = (members: string) => CHAT.replace(':0.60 }', `:0.60,${members} }`);
const chatWithMessages = (messages: string, extra = '') =>
  CHAT.replace(MSGS, messages).replace(':0.60 }', `:0.60${extra} }`);

type Case = [
  string,
  string,
  'chat' | 'completions',
  ReasoningWant | undefined,
  ReasoningRule | undefined,
  string,
  string | undefined,
];

const et: ReasoningRule = { model: '*', mechanism: 'enable_thinking' };
const re: ReasoningRule = { model: '*', mechanism: 'reasoning_effort' };
const nt: ReasoningRule = { model: '*', mechanism: 'nothink_token' };
const pf: ReasoningRule = { model: '*', mechanism: 'prefill' };
const or: ReasoningRule = { model: '*', mechanism: 'openrouter_reasoning' };
const gptOss: ReasoningRule = {
  model: '*',
  mechanism: 'reasoning_effort',
  params: { off: 'low', on: 'high', efforts: ['low', 'medium', 'high'], template_kwarg: true },
};

const cases: Case[] = [
  // enable_thinking
  [
    'enable_thinking off',
    CHAT,
    'chat',
    OFF,
    et,
    chatPlus('"chat_template_kwargs":{"enable_thinking":false}'),
    'off:enable_thinking',
  ],
  [
    'enable_thinking on',
    CHAT,
    'chat',
    ON,
    et,
    chatPlus('"chat_template_kwargs":{"enable_thinking":true}'),
    'on:enable_thinking',
  ],
  [
    "enable_thinking merges into the client's kwargs where they stand",
    '{"chat_template_kwargs": {"preserve_thinking": true, "enable_thinking": true},  "messages":[]}',
    'chat',
    OFF,
    et,
    '{"chat_template_kwargs": {"preserve_thinking":true,"enable_thinking":false},  "messages":[]}',
    'off:enable_thinking',
  ],
  [
    'enable_thinking with the DeepSeek key',
    CHAT,
    'chat',
    ON,
    { ...et, params: { key: 'thinking' } },
    chatPlus('"chat_template_kwargs":{"thinking":true}'),
    'on:enable_thinking',
  ],
  [
    'enable_thinking on completions',
    COMPLETION,
    'completions',
    OFF,
    et,
    '{"model":"q" ,  "prompt" : "Once upon",\t"max_tokens":1e2,"chat_template_kwargs":{"enable_thinking":false}}',
    'off:enable_thinking',
  ],
  // reasoning_effort
  [
    'reasoning_effort off: minimal',
    CHAT,
    'chat',
    OFF,
    re,
    chatPlus('"reasoning_effort":"minimal"'),
    'off:reasoning_effort',
  ],
  ['reasoning_effort on: high', CHAT, 'chat', ON, re, chatPlus('"reasoning_effort":"high"'), 'on:reasoning_effort'],
  [
    "reasoning_effort on: the client's level",
    CHAT,
    'chat',
    { value: 'on', effort: 'medium' },
    re,
    chatPlus('"reasoning_effort":"medium"'),
    'on:reasoning_effort',
  ],
  [
    'reasoning_effort on: params.on',
    CHAT,
    'chat',
    ON,
    { ...re, params: { on: 'medium' } },
    chatPlus('"reasoning_effort":"medium"'),
    'on:reasoning_effort',
  ],
  [
    'reasoning_effort on: the client beats params.on',
    CHAT,
    'chat',
    { value: 'on', effort: 'low' },
    { ...re, params: { on: 'medium' } },
    chatPlus('"reasoning_effort":"low"'),
    'on:reasoning_effort',
  ],
  [
    'reasoning_effort off: params.off',
    CHAT,
    'chat',
    OFF,
    { ...re, params: { off: 'none' } },
    chatPlus('"reasoning_effort":"none"'),
    'off:reasoning_effort',
  ],
  [
    'reasoning_effort on: a budget becomes a level',
    CHAT,
    'chat',
    { value: 'on', budgetTokens: 10000 },
    re,
    chatPlus('"reasoning_effort":"medium"'),
    'on:reasoning_effort',
  ],
  [
    "reasoning_effort replaces the client's value in place",
    '{"reasoning_effort" : "none", "messages":[]}',
    'chat',
    OFF,
    gptOss,
    '{"reasoning_effort" : "low", "messages":[],"chat_template_kwargs":{"reasoning_effort":"low"}}',
    'off:reasoning_effort',
  ],
  [
    'gpt-oss: xhigh clamps to high, also in the template kwargs',
    CHAT,
    'chat',
    { value: 'on', effort: 'xhigh' },
    gptOss,
    chatPlus('"reasoning_effort":"high","chat_template_kwargs":{"reasoning_effort":"high"}'),
    'on:reasoning_effort',
  ],
  [
    'reasoning_effort on completions',
    COMPLETION,
    'completions',
    ON,
    re,
    '{"model":"q" ,  "prompt" : "Once upon",\t"max_tokens":1e2,"reasoning_effort":"high"}',
    'on:reasoning_effort',
  ],
  // nothink_token
  [
    'nothink_token off: appended to the last user message',
    CHAT,
    'chat',
    OFF,
    nt,
    chatWithMessages('[{"role":"system","content":"be brief"},{"role":"user","content":"hi /nothink"}]'),
    'off:nothink_token',
  ],
  [
    'nothink_token off: params.token',
    CHAT,
    'chat',
    OFF,
    { ...nt, params: { token: '/no_think' } },
    chatWithMessages('[{"role":"system","content":"be brief"},{"role":"user","content":"hi /no_think"}]'),
    'off:nothink_token',
  ],
  ['nothink_token on: nothing to do, the model thinks by default', CHAT, 'chat', ON, nt, CHAT, 'on:nothink_token'],
  [
    'nothink_token on: params.on_token',
    CHAT,
    'chat',
    ON,
    { ...nt, params: { on_token: '/think' } },
    chatWithMessages('[{"role":"system","content":"be brief"},{"role":"user","content":"hi /think"}]'),
    'on:nothink_token',
  ],
  [
    'nothink_token: the last text part of a parts array',
    '{"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"what is it?\\n"}]}]}',
    'chat',
    OFF,
    nt,
    '{"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"what is it?\\n/nothink"}]}]}',
    'off:nothink_token',
  ],
  [
    'nothink_token: an image-only turn gets a text part',
    '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x"}}]}]}',
    'chat',
    OFF,
    nt,
    '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"/nothink"}]}]}',
    'off:nothink_token',
  ],
  [
    'nothink_token: in a tool loop, the last USER turn',
    '{"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"w","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":"sunny"}]}',
    'chat',
    OFF,
    nt,
    '{"messages":[{"role":"user","content":"weather? /nothink"},{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"w","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":"sunny"}]}',
    'off:nothink_token',
  ],
  [
    'nothink_token: already there, messages keep their bytes',
    '{"messages":[ {"role":"user","content":"hi /nothink"} ]}',
    'chat',
    OFF,
    nt,
    '{"messages":[ {"role":"user","content":"hi /nothink"} ]}',
    'off:nothink_token',
  ],
  [
    'nothink_token: no user message',
    '{"messages":[{"role":"system","content":"x"}]}',
    'chat',
    OFF,
    nt,
    '{"messages":[{"role":"system","content":"x"}]}',
    'unsupported',
  ],
  [
    'nothink_token on completions: the prompt string',
    COMPLETION,
    'completions',
    OFF,
    nt,
    '{"model":"q" ,  "prompt" : "Once upon /nothink",\t"max_tokens":1e2}',
    'off:nothink_token',
  ],
  [
    'nothink_token on completions: a batch of prompts',
    '{"prompt":["a","b "]}',
    'completions',
    OFF,
    nt,
    '{"prompt":["a /nothink","b /nothink"]}',
    'off:nothink_token',
  ],
  [
    'nothink_token on completions: token ids cannot take text',
    '{"prompt":[1,2,3]}',
    'completions',
    OFF,
    nt,
    '{"prompt":[1,2,3]}',
    'unsupported',
  ],
  // prefill
  [
    'prefill off: a closed think block as the assistant turn',
    CHAT,
    'chat',
    OFF,
    pf,
    chatWithMessages(
      '[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"<think>\\n\\n</think>\\n\\n"}]',
    ),
    'off:prefill',
  ],
  [
    'prefill off: params.text and continue_final_message (vLLM)',
    CHAT,
    'chat',
    OFF,
    { ...pf, params: { text: '<think>\n</think>\n', continue_final_message: true } },
    chatWithMessages(
      '[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"<think>\\n</think>\\n"}]',
      ',"continue_final_message":true,"add_generation_prompt":false',
    ),
    'off:prefill',
  ],
  ['prefill on: nothing to do', CHAT, 'chat', ON, pf, CHAT, 'on:prefill'],
  [
    'prefill: the client already prefills',
    '{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Sure"}]}',
    'chat',
    OFF,
    pf,
    '{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Sure"}]}',
    'unsupported',
  ],
  ['prefill on completions: unsupported', COMPLETION, 'completions', OFF, pf, COMPLETION, 'unsupported'],
  // openrouter_reasoning
  [
    'openrouter off: enabled false',
    CHAT,
    'chat',
    OFF,
    or,
    chatPlus('"reasoning":{"enabled":false}'),
    'off:openrouter_reasoning',
  ],
  [
    'openrouter off: params.off',
    CHAT,
    'chat',
    OFF,
    { ...or, params: { off: { effort: 'low' } } },
    chatPlus('"reasoning":{"effort":"low"}'),
    'off:openrouter_reasoning',
  ],
  [
    'openrouter on: enabled true',
    CHAT,
    'chat',
    ON,
    or,
    chatPlus('"reasoning":{"enabled":true}'),
    'on:openrouter_reasoning',
  ],
  [
    'openrouter on: the effort',
    CHAT,
    'chat',
    { value: 'on', effort: 'high' },
    or,
    chatPlus('"reasoning":{"effort":"high"}'),
    'on:openrouter_reasoning',
  ],
  [
    'openrouter on: a budget as max_tokens',
    CHAT,
    'chat',
    { value: 'on', budgetTokens: 8000 },
    or,
    chatPlus('"reasoning":{"max_tokens":8000}'),
    'on:openrouter_reasoning',
  ],
  [
    'openrouter: the gateway string replaced, reasoning_effort dropped',
    '{"reasoning":"off", "reasoning_effort":"high","messages":[]}',
    'chat',
    OFF,
    or,
    '{"reasoning":{"enabled":false},"messages":[]}',
    'off:openrouter_reasoning',
  ],
  [
    "openrouter: merged into the client's own object",
    '{"reasoning":{"exclude":true,"max_tokens":10},"messages":[]}',
    'chat',
    { value: 'on', effort: 'low' },
    or,
    '{"reasoning":{"exclude":true,"effort":"low"},"messages":[]}',
    'on:openrouter_reasoning',
  ],
  [
    'openrouter on completions',
    COMPLETION,
    'completions',
    OFF,
    or,
    '{"model":"q" ,  "prompt" : "Once upon",\t"max_tokens":1e2,"reasoning":{"enabled":false}}',
    'off:openrouter_reasoning',
  ],
  // nothing applied
  ['none: unsupported, body as sent', CHAT, 'chat', OFF, { model: '*', mechanism: 'none' }, CHAT, 'unsupported'],
  ['no rule: unsupported, body as sent', CHAT, 'chat', ON, undefined, CHAT, 'unsupported'],
  ['no want: nothing, not even a header', CHAT, 'chat', undefined, et, CHAT, undefined],
];

describe('reasoningEdits', () => {
  for (const [name, raw, kind, want, rule, expected, applied] of cases) {
    test(`${kind}: ${name}`, () => {
      const result = run(raw, kind, want, rule);
      assert.equal(result.out, expected);
      assert.equal(result.applied, applied);
    });
  }

  test('the gateway string is stripped, with or without a want', () => {
    const raw = '{"model":"q", "reasoning" : "auto" ,"messages":[]}';
    assert.deepEqual(run(raw, 'chat', undefined, undefined, true), {
      out: '{"model":"q" ,"messages":[]}',
      applied: undefined,
      edits: new Map([['reasoning', null]]),
    });
    const off = run('{"reasoning":"off", "messages":[]}', 'chat', OFF, et, true);
    assert.equal(off.out, '{"messages":[],"chat_template_kwargs":{"enable_thinking":false}}');
    assert.equal(off.applied, 'off:enable_thinking');
    const unsupported = run('{"reasoning":"off", "messages":[]}', 'chat', OFF, undefined, true);
    assert.equal(unsupported.out, '{"messages":[]}', 'the gateway field goes even when nothing else can be done');
    assert.equal(unsupported.applied, 'unsupported');
  });

  test('messages are left alone by the body-level mechanisms', () => {
    for (const rule of [et, re, or])
      assert.equal(run(CHAT, 'chat', OFF, rule).out.includes(MSGS), true, rule.mechanism);
    assert.equal(run(CHAT, 'chat', OFF, et).out.includes(TAIL), true);
  });

  test("the rule's params are not mutated", () => {
    const rule: ReasoningRule = { model: '*', mechanism: 'openrouter_reasoning', params: { off: { effort: 'low' } } };
    run('{"reasoning":{"exclude":true}}', 'chat', OFF, rule);
    assert.deepEqual(rule.params, { off: { effort: 'low' } });
  });
});

describe('effort helpers', () => {
  test('clampEffort picks the nearest level the model takes', () => {
    const lmh = ['low', 'medium', 'high'];
    const table: [string, readonly string[] | undefined, string][] = [
      ['minimal', lmh, 'low'],
      ['none', lmh, 'low'],
      ['medium', lmh, 'medium'],
      ['xhigh', lmh, 'high'],
      ['max', lmh, 'high'],
      ['weird', lmh, 'high'],
      ['xhigh', undefined, 'xhigh'],
      ['medium', ['low', 'high'], 'low'],
    ];
    for (const [level, allowed, expected] of table)
      assert.equal(clampEffort(level, allowed), expected, `${level} in ${allowed}`);
  });

  test('effortForBudget', () => {
    assert.deepEqual([1024, 4000, 4096, 10000, 16384, 31999].map(effortForBudget), [
      'low',
      'low',
      'low',
      'medium',
      'medium',
      'high',
    ]);
  });
});
