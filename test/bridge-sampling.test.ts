/**
 * Sampling defaults: client > alias > backend per key, values as JSON text applied to the raw
 * body, synonyms, and validation that names the offending key.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SAMPLING_FORBIDDEN_KEYS, samplingEdits, samplingProblems } from '../src/bridges/sampling.ts';
import { editTopLevel } from '../src/wire/raw-json.ts';

describe('samplingEdits', () => {
  const table: [
    string,
    Record<string, unknown>,
    Record<string, unknown> | undefined,
    Record<string, unknown> | undefined,
    Record<string, string>,
  ][] = [
    ['nothing configured', { temperature: 1 }, undefined, undefined, {}],
    [
      'the alias fills what the client left out',
      { messages: [] },
      { temperature: 0.6, top_k: 20 },
      undefined,
      { temperature: '0.6', top_k: '20' },
    ],
    ['the client wins', { temperature: 1 }, { temperature: 0.6 }, { temperature: 0.2 }, {}],
    ["a client null is the client's value too", { temperature: null }, { temperature: 0.6 }, undefined, {}],
    [
      'the alias wins over the backend',
      {},
      { temperature: 0.6 },
      { temperature: 0.2, min_p: 0.05 },
      { temperature: '0.6', min_p: '0.05' },
    ],
    [
      'the backend alone',
      {},
      undefined,
      { repeat_penalty: 1.1, stop: ['</s>'] },
      { repeat_penalty: '1.1', stop: '["</s>"]' },
    ],
    [
      'max_tokens is not added beside max_completion_tokens',
      { max_completion_tokens: 100 },
      { max_tokens: 4096 },
      undefined,
      {},
    ],
    [
      'max_completion_tokens is not added beside max_tokens',
      { max_tokens: 100 },
      undefined,
      { max_completion_tokens: 4096 },
      {},
    ],
    [
      'forbidden keys are skipped even unvalidated',
      {},
      { stream: true, model: 'x', _internal: 1, tools: [] },
      { temperature: 0.3 },
      { temperature: '0.3' },
    ],
    ['nested values as JSON', {}, { logit_bias: { '50256': -100 } }, undefined, { logit_bias: '{"50256":-100}' }],
  ];
  for (const [name, body, alias, backend, expected] of table) {
    test(name, () => assert.deepEqual(Object.fromEntries(samplingEdits(body, alias, backend)), expected));
  }

  test("applied to the raw body, the client's bytes stay", () => {
    const raw = '{ "model":"q" , "seed" : 12345678901234567891,\n "top_p":0.90 }';
    const edits = samplingEdits(JSON.parse(raw), { top_p: 0.95, temperature: 0.6 }, { top_k: 20 });
    assert.equal(
      editTopLevel(raw, edits),
      '{ "model":"q" , "seed" : 12345678901234567891,\n "top_p":0.90,"temperature":0.6,"top_k":20 }',
    );
  });
});

describe('samplingProblems', () => {
  test('valid defaults have none', () => {
    assert.deepEqual(
      samplingProblems(
        { temperature: 0.6, top_p: 0.95, top_k: 20, stop: ['x'], logit_bias: { '1': 2 } },
        'alias_defaults.fast.sampling_defaults',
      ),
      [],
    );
  });

  const table: [string, unknown, [string, RegExp][]][] = [
    [
      'not a mapping',
      [1],
      [['backends[0].sampling_defaults', /must be a mapping of request fields to values, got a list/]],
    ],
    ['stream', { stream: true }, [['backends[0].sampling_defaults.stream', /^is set by the client, not a default$/]]],
    [
      'stream_options',
      { stream_options: {} },
      [['backends[0].sampling_defaults.stream_options', /is set by the client/]],
    ],
    [
      'model, messages, input, prompt',
      { model: 'x', messages: [], input: 'x', prompt: 'p' },
      [
        ['backends[0].sampling_defaults.model', /the request's content/],
        ['backends[0].sampling_defaults.messages', /the request's content/],
        ['backends[0].sampling_defaults.input', /the request's content/],
        ['backends[0].sampling_defaults.prompt', /the request's content/],
      ],
    ],
    [
      'tools',
      { tools: [], tool_choice: 'auto' },
      [
        ['backends[0].sampling_defaults.tools', /part of the conversation/],
        ['backends[0].sampling_defaults.tool_choice', /part of the conversation/],
      ],
    ],
    [
      "the reasoning switch's keys",
      { reasoning_effort: 'low', chat_template_kwargs: {} },
      [
        ['backends[0].sampling_defaults.reasoning_effort', /reasoning setting or a reasoning rule/],
        ['backends[0].sampling_defaults.chat_template_kwargs', /reasoning setting or a reasoning rule/],
      ],
    ],
    ['underscore keys', { _secret: 1 }, [['backends[0].sampling_defaults._secret', /gateway's own/]]],
    ['null', { temperature: null }, [['backends[0].sampling_defaults.temperature', /must not be null/]]],
    ['infinity', { max_tokens: Infinity }, [['backends[0].sampling_defaults.max_tokens', /finite number/]]],
    [
      'infinity deep inside',
      { logit_bias: { '1': -Infinity } },
      [['backends[0].sampling_defaults.logit_bias', /member that must be a finite number/]],
    ],
    [
      'an odd key is quoted in the path',
      { 'top p': 1, stream: false },
      [['backends[0].sampling_defaults.stream', /is set by the client/]],
    ],
  ];
  for (const [name, raw, expected] of table) {
    test(name, () => {
      const problems = samplingProblems(raw, 'backends[0].sampling_defaults');
      assert.deepEqual(
        problems.map((p) => p.path),
        expected.map((e) => e[0]),
      );
      problems.forEach((p, i) => assert.match(p.message, expected[i][1]));
    });
  }

  test('the message reads as the brief asks', () => {
    const [p] = samplingProblems({ stream: true }, 'sampling_defaults');
    assert.equal(`${p.path} ${p.message}`, 'sampling_defaults.stream is set by the client, not a default');
  });

  test('every forbidden key is rejected', () => {
    const raw = Object.fromEntries(SAMPLING_FORBIDDEN_KEYS.map((k) => [k, 1]));
    assert.equal(samplingProblems(raw, 'x').length, SAMPLING_FORBIDDEN_KEYS.length);
  });
});
