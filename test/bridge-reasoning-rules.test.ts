/**
 * The reasoning rule list: first enabled match wins, the backend filter, case-insensitive
 * globs, the shipped defaults on real model ids, and validation by key path.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  compileRules,
  DEFAULT_REASONING_RULES,
  matchRule,
  ruleProblems,
  type ReasoningRule,
} from '../src/bridges/reasoning/rules.ts';

describe('matchRule', () => {
  const rules: ReasoningRule[] = [
    { model: 'qwen3*', backends: ['vllm-a'], mechanism: 'reasoning_effort' },
    { model: 'qwen3*', enabled: false, mechanism: 'prefill' },
    { model: '*QWEN3*', mechanism: 'enable_thinking' },
    { model: 'qwen3-8b', mechanism: 'nothink_token' },
    { model: 'gpt-?ss', mechanism: 'none' },
  ];
  const compiled = compileRules(rules);
  const table: [string, string, string, ReasoningRule | undefined][] = [
    ['backend filter matches', 'qwen3-8b', 'vllm-a', rules[0]],
    ['backend filter skips, disabled rule skipped, next match by case-insensitive glob', 'qwen3-8b', 'llama', rules[2]],
    ['glob ignores case on the model id', 'unsloth/Qwen3-30B-A3B-GGUF', 'llama', rules[2]],
    ['? is one character', 'gpt-oss', 'x', rules[4]],
    ['? is exactly one character', 'gpt-ooss', 'x', undefined],
    ['no match', 'llama-3.1-8b', 'llama', undefined],
    ['backend names are exact', 'qwen3-8b', 'VLLM-A', rules[2]],
  ];
  for (const [name, model, backend, expected] of table) {
    test(name, () => assert.equal(matchRule(compiled, model, backend), expected));
  }

  test('configured rules come before the defaults', () => {
    const mine: ReasoningRule = { model: '*qwen3*', backends: ['ollama'], mechanism: 'nothink_token' };
    const all = compileRules([mine, ...DEFAULT_REASONING_RULES]);
    assert.equal(matchRule(all, 'Qwen/Qwen3-8B', 'ollama'), mine);
    assert.equal(matchRule(all, 'Qwen/Qwen3-8B', 'vllm')?.mechanism, 'enable_thinking');
  });

  test('the defaults are frozen to the leaves', () => {
    assert.ok(Object.isFrozen(DEFAULT_REASONING_RULES));
    for (const r of DEFAULT_REASONING_RULES) {
      assert.ok(Object.isFrozen(r));
      if (r.params) assert.ok(Object.isFrozen(r.params));
    }
  });
});

describe('DEFAULT_REASONING_RULES on real model ids', () => {
  const defaults = compileRules(DEFAULT_REASONING_RULES);
  const table: [string, string, string | undefined, Record<string, unknown> | undefined][] = [
    ['Qwen/Qwen3-8B', 'vllm', 'enable_thinking', undefined],
    ['Qwen/Qwen3-30B-A3B', 'vllm', 'enable_thinking', undefined],
    ['unsloth/Qwen3-30B-A3B-GGUF', 'llama', 'enable_thinking', undefined],
    ['Qwen3-8B-Q4_K_M.gguf', 'llama', 'enable_thinking', undefined],
    ['qwen3:8b', 'ollama', 'nothink_token', { token: '/no_think', on_token: '/think' }],
    ['hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M', 'ollama', 'nothink_token', { token: '/no_think', on_token: '/think' }],
    ['Qwen/Qwen3-30B-A3B-Instruct-2507', 'vllm', 'none', undefined],
    ['Qwen/Qwen3-235B-A22B-Thinking-2507', 'vllm', 'none', undefined],
    ['qwen3:30b-a3b-instruct-2507-q4_K_M', 'ollama', 'none', undefined],
    ['Qwen/Qwen3-Coder-30B-A3B-Instruct', 'vllm', 'none', undefined],
    ['qwen3-coder:30b', 'ollama', 'none', undefined],
    ['Qwen/QwQ-32B', 'vllm', 'none', undefined],
    ['deepseek-ai/DeepSeek-R1-Distill-Qwen-7B', 'vllm', 'none', undefined],
    ['deepseek-ai/DeepSeek-R1-0528-Qwen3-8B', 'vllm', 'none', undefined],
    ['deepseek-r1:8b', 'ollama', 'none', undefined],
    ['deepseek-ai/DeepSeek-V3.1', 'vllm', 'enable_thinking', { key: 'thinking' }],
    ['deepseek-ai/DeepSeek-V3.1-Terminus', 'vllm', 'enable_thinking', { key: 'thinking' }],
    ['deepseek/deepseek-chat-v3.1', 'openrouter', 'openrouter_reasoning', undefined],
    [
      'openai/gpt-oss-20b',
      'vllm',
      'reasoning_effort',
      { off: 'low', on: 'high', efforts: ['low', 'medium', 'high'], template_kwarg: true },
    ],
    [
      'gpt-oss:20b',
      'ollama',
      'reasoning_effort',
      { off: 'low', on: 'high', efforts: ['low', 'medium', 'high'], template_kwarg: true },
    ],
    ['zai-org/GLM-4.6', 'vllm', 'enable_thinking', undefined],
    ['zai-org/GLM-4.5-Air', 'vllm', 'enable_thinking', undefined],
    ['unsloth/GLM-4.7-Flash-GGUF', 'llama', 'enable_thinking', undefined],
    ['z-ai/glm-4.6', 'openrouter', 'openrouter_reasoning', undefined],
    ['anthropic/claude-sonnet-4.5', 'openrouter', 'openrouter_reasoning', undefined],
    ['google/gemini-2.5-flash', 'openrouter', 'openrouter_reasoning', undefined],
    ['google/gemini-2.5-pro', 'openrouter', 'openrouter_reasoning', { off: { effort: 'low' } }],
    ['openai/o3-mini', 'openrouter', 'openrouter_reasoning', { off: { effort: 'low' } }],
    ['openai/gpt-5', 'openrouter', 'openrouter_reasoning', { off: { effort: 'minimal' } }],
    ['openai/gpt-5-mini', 'openrouter', 'openrouter_reasoning', { off: { effort: 'minimal' } }],
    ['openai/gpt-5.1', 'openrouter', 'openrouter_reasoning', { off: { effort: 'none' } }],
    ['meta-llama/Llama-3.1-8B-Instruct', 'vllm', undefined, undefined],
    ['mistral-small:24b', 'ollama', undefined, undefined],
  ];
  for (const [model, backend, mechanism, params] of table) {
    test(`${model} on ${backend} → ${mechanism ?? 'no rule'}`, () => {
      const rule = matchRule(defaults, model, backend);
      assert.equal(rule?.mechanism, mechanism);
      assert.deepEqual(rule?.params, params);
    });
  }
});

describe('ruleProblems', () => {
  test('a valid list has none (the defaults included)', () => {
    assert.deepEqual(ruleProblems([...DEFAULT_REASONING_RULES], 'reasoning_rules'), []);
    assert.deepEqual(ruleProblems([], 'reasoning_rules'), []);
  });

  const table: [string, unknown, { path: string; message: RegExp }[]][] = [
    ['not a list', { model: 'x' }, [{ path: 'reasoning_rules', message: /must be a list of rules, got a mapping/ }]],
    ['a rule that is not a mapping', ['qwen3*'], [{ path: 'reasoning_rules[0]', message: /must be a mapping/ }]],
    [
      'missing model and mechanism',
      [{}],
      [
        { path: 'reasoning_rules[0].model', message: /is required/ },
        { path: 'reasoning_rules[0].mechanism', message: /is required \(one of enable_thinking, reasoning_effort/ },
      ],
    ],
    [
      'non-string model',
      [{ model: 3, mechanism: 'none' }],
      [{ path: 'reasoning_rules[0].model', message: /non-empty glob string, got number 3/ }],
    ],
    [
      'empty model',
      [{ model: ' ', mechanism: 'none' }],
      [{ path: 'reasoning_rules[0].model', message: /non-empty glob string/ }],
    ],
    [
      'unknown mechanism',
      [{ model: 'x', mechanism: 'think_harder' }],
      [{ path: 'reasoning_rules[0].mechanism', message: /must be one of .*, got string "think_harder"/ }],
    ],
    [
      'unknown rule key',
      [{ model: 'x', mechanism: 'none', backend: 'a' }],
      [{ path: 'reasoning_rules[0].backend', message: /unknown key/ }],
    ],
    [
      'backends not a list',
      [{ model: 'x', mechanism: 'none', backends: 'a' }],
      [{ path: 'reasoning_rules[0].backends', message: /must be a list of backend names/ }],
    ],
    [
      'a bad backend name',
      [{ model: 'x', mechanism: 'none', backends: ['a', ''] }],
      [{ path: 'reasoning_rules[0].backends[1]', message: /must be a backend name/ }],
    ],
    [
      'enabled not boolean',
      [{ model: 'x', mechanism: 'none', enabled: 'no' }],
      [{ path: 'reasoning_rules[0].enabled', message: /true or false/ }],
    ],
    [
      'params not a mapping',
      [{ model: 'x', mechanism: 'prefill', params: 'x' }],
      [{ path: 'reasoning_rules[0].params', message: /must be a mapping/ }],
    ],
    [
      'unknown param',
      [{ model: 'x', mechanism: 'nothink_token', params: { tokn: '/no_think' } }],
      [{ path: 'reasoning_rules[0].params.tokn', message: /unknown param \(nothink_token reads token, on_token\)/ }],
    ],
    [
      'none takes no params',
      [{ model: 'x', mechanism: 'none', params: { a: 1 } }],
      [{ path: 'reasoning_rules[0].params.a', message: /none takes no params/ }],
    ],
    [
      'a bad token',
      [{ model: 'x', mechanism: 'nothink_token', params: { token: 5 } }],
      [{ path: 'reasoning_rules[0].params.token', message: /non-empty string, got number 5/ }],
    ],
    [
      'an empty prefill text',
      [{ model: 'x', mechanism: 'prefill', params: { text: '' } }],
      [{ path: 'reasoning_rules[0].params.text', message: /must not be empty/ }],
    ],
    [
      'OpenRouter off must be an object',
      [{ model: 'x', mechanism: 'openrouter_reasoning', params: { off: 'minimal' } }],
      [{ path: 'reasoning_rules[0].params.off', message: /must be a mapping/ }],
    ],
    [
      'effort outside the efforts list',
      [{ model: 'x', mechanism: 'reasoning_effort', params: { off: 'minimal', efforts: ['low', 'high'] } }],
      [{ path: 'reasoning_rules[0].params.off', message: /"minimal" is not in efforts \(low, high\)/ }],
    ],
    [
      'efforts not a list of strings',
      [{ model: 'x', mechanism: 'reasoning_effort', params: { efforts: [] } }],
      [{ path: 'reasoning_rules[0].params.efforts', message: /non-empty list of strings/ }],
    ],
    [
      'the second rule is the bad one',
      [
        { model: 'x', mechanism: 'none' },
        { model: 'y', mechanism: 'enable_thinking', params: { key: '' } },
      ],
      [{ path: 'reasoning_rules[1].params.key', message: /non-empty string/ }],
    ],
  ];
  for (const [name, raw, expected] of table) {
    test(name, () => {
      const problems = ruleProblems(raw, 'reasoning_rules');
      assert.deepEqual(
        problems.map((p) => p.path),
        expected.map((e) => e.path),
      );
      problems.forEach((p, i) => assert.match(p.message, expected[i].message));
    });
  }
});
