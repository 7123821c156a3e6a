/**
 * The reasoning switch: every client spelling per body kind, the invalid ones, the Anthropic
 * intent, and the alias default's place in the precedence.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  fromAnthropicIntent,
  readReasoningSwitch,
  withAliasDefault,
  type ReasoningWant,
} from '../src/bridges/reasoning/switch.ts';
import type { ReasoningIntent } from '../src/bridges/anthropic/types.ts';

type Kind = 'chat' | 'completions' | 'responses';
type Expected = { want?: ReasoningWant; strip: boolean; auto: boolean; invalid?: string };

const ALL: Kind[] = ['chat', 'completions', 'responses'];
const TEXT: Kind[] = ['chat', 'completions'];

const cases: [string, Record<string, unknown>, Kind[], Expected][] = [
  ['nothing', {}, ALL, { strip: false, auto: false }],
  ['gateway "off"', { reasoning: 'off' }, ALL, { want: { value: 'off' }, strip: true, auto: false }],
  ['gateway "on"', { reasoning: 'on' }, ALL, { want: { value: 'on' }, strip: true, auto: false }],
  ['gateway "auto"', { reasoning: 'auto' }, ALL, { strip: true, auto: true }],
  [
    'gateway string, any case and padding',
    { reasoning: ' OFF ' },
    ALL,
    { want: { value: 'off' }, strip: true, auto: false },
  ],
  [
    'gateway "on" takes its level from reasoning_effort',
    { reasoning: 'on', reasoning_effort: 'low' },
    ALL,
    { want: { value: 'on', effort: 'low' }, strip: true, auto: false },
  ],
  [
    'gateway "on" beats reasoning_effort "none"',
    { reasoning: 'on', reasoning_effort: 'none' },
    ALL,
    { want: { value: 'on' }, strip: true, auto: false },
  ],
  [
    'gateway "off" beats reasoning_effort "high"',
    { reasoning: 'off', reasoning_effort: 'high' },
    ALL,
    { want: { value: 'off' }, strip: true, auto: false },
  ],
  [
    'gateway "auto" beats reasoning_effort',
    { reasoning: 'auto', reasoning_effort: 'none' },
    ALL,
    { strip: true, auto: true },
  ],
  ['reasoning_effort none', { reasoning_effort: 'none' }, ALL, { want: { value: 'off' }, strip: false, auto: false }],
  [
    'reasoning_effort minimal',
    { reasoning_effort: 'minimal' },
    ALL,
    { want: { value: 'off' }, strip: false, auto: false },
  ],
  [
    'reasoning_effort low',
    { reasoning_effort: 'low' },
    ALL,
    { want: { value: 'on', effort: 'low' }, strip: false, auto: false },
  ],
  [
    'reasoning_effort medium',
    { reasoning_effort: 'medium' },
    ALL,
    { want: { value: 'on', effort: 'medium' }, strip: false, auto: false },
  ],
  [
    'reasoning_effort High',
    { reasoning_effort: 'High' },
    ALL,
    { want: { value: 'on', effort: 'high' }, strip: false, auto: false },
  ],
  ['reasoning_effort null is absent', { reasoning_effort: null }, ALL, { strip: false, auto: false }],
  [
    "OpenRouter object on chat / completions: the client's own",
    { reasoning: { effort: 'high' } },
    TEXT,
    { strip: false, auto: true },
  ],
  [
    'OpenRouter object even beside reasoning_effort',
    { reasoning: { enabled: false }, reasoning_effort: 'high' },
    TEXT,
    { strip: false, auto: true },
  ],
  [
    "template kwarg enable_thinking: the client's own",
    { chat_template_kwargs: { enable_thinking: false } },
    TEXT,
    { strip: false, auto: true },
  ],
  [
    "template kwarg thinking (DeepSeek): the client's own",
    { chat_template_kwargs: { thinking: true } },
    TEXT,
    { strip: false, auto: true },
  ],
  [
    'other template kwargs say nothing',
    { chat_template_kwargs: { preserve_thinking: true } },
    TEXT,
    { strip: false, auto: false },
  ],
  [
    'reasoning_effort wins over a template kwarg',
    { reasoning_effort: 'none', chat_template_kwargs: { enable_thinking: true } },
    TEXT,
    { want: { value: 'off' }, strip: false, auto: false },
  ],
  [
    'Responses effort none',
    { reasoning: { effort: 'none' } },
    ['responses'],
    { want: { value: 'off' }, strip: false, auto: false },
  ],
  [
    'Responses effort minimal',
    { reasoning: { effort: 'minimal' } },
    ['responses'],
    { want: { value: 'off' }, strip: false, auto: false },
  ],
  [
    'Responses effort high',
    { reasoning: { effort: 'high', summary: 'auto' } },
    ['responses'],
    { want: { value: 'on', effort: 'high' }, strip: false, auto: false },
  ],
  [
    'Responses object beats reasoning_effort',
    { reasoning: { effort: 'low' }, reasoning_effort: 'none' },
    ['responses'],
    { want: { value: 'on', effort: 'low' }, strip: false, auto: false },
  ],
  [
    'Responses summary only: falls back to reasoning_effort',
    { reasoning: { summary: 'auto' }, reasoning_effort: 'none' },
    ['responses'],
    { want: { value: 'off' }, strip: false, auto: false },
  ],
  [
    'Responses summary only, nothing else',
    { reasoning: { summary: 'auto' } },
    ['responses'],
    { strip: false, auto: false },
  ],
  // invalid spellings: the route answers 400 naming the param
  ['gateway "maybe"', { reasoning: 'maybe' }, ALL, { strip: true, auto: false, invalid: 'reasoning' }],
  ['gateway ""', { reasoning: '' }, ALL, { strip: true, auto: false, invalid: 'reasoning' }],
  ['reasoning true', { reasoning: true }, ALL, { strip: false, auto: false, invalid: 'reasoning' }],
  ['reasoning as a list', { reasoning: ['on'] }, ALL, { strip: false, auto: false, invalid: 'reasoning' }],
  [
    'reasoning_effort a number',
    { reasoning_effort: 3 },
    ALL,
    { strip: false, auto: false, invalid: 'reasoning_effort' },
  ],
  ['reasoning_effort empty', { reasoning_effort: '' }, ALL, { strip: false, auto: false, invalid: 'reasoning_effort' }],
  [
    'gateway "on" with a bad reasoning_effort',
    { reasoning: 'on', reasoning_effort: 7 },
    ALL,
    { strip: true, auto: false, invalid: 'reasoning_effort' },
  ],
  [
    'Responses effort a number',
    { reasoning: { effort: 2 } },
    ['responses'],
    { strip: false, auto: false, invalid: 'reasoning.effort' },
  ],
];

describe('readReasoningSwitch', () => {
  for (const [name, body, kinds, expected] of cases) {
    for (const kind of kinds) {
      test(`${kind}: ${name}`, () => {
        const read = readReasoningSwitch(body, kind);
        assert.deepEqual(read.want, expected.want);
        assert.equal(read.stripGatewayField, expected.strip, 'stripGatewayField');
        assert.equal(read.clientSaidAuto, expected.auto, 'clientSaidAuto');
        assert.equal(read.invalid?.param, expected.invalid);
        if (expected.invalid) {
          assert.equal(read.want, undefined);
          assert.match(
            read.invalid!.message,
            new RegExp(`^${expected.invalid.replace('.', '\\.')} `),
            'the message starts with the param',
          );
        }
      });
    }
  }

  test('the invalid message quotes what the client sent', () => {
    assert.equal(
      readReasoningSwitch({ reasoning: 'maybe' }, 'chat').invalid?.message,
      'reasoning must be "off", "on" or "auto" (got "maybe")',
    );
  });
});

describe('fromAnthropicIntent', () => {
  const intents: [ReasoningIntent | undefined, ReasoningWant | undefined][] = [
    [undefined, undefined],
    [{ mode: 'off' }, { value: 'off' }],
    [{ mode: 'on' }, { value: 'on' }],
    [
      { mode: 'on', budgetTokens: 10000 },
      { value: 'on', budgetTokens: 10000 },
    ],
    [
      { mode: 'effort', effort: 'low' },
      { value: 'on', effort: 'low' },
    ],
    [
      { mode: 'effort', effort: 'high' },
      { value: 'on', effort: 'high' },
    ],
    [
      { mode: 'effort', effort: 'max' },
      { value: 'on', effort: 'xhigh' },
    ],
    [{ mode: 'effort', effort: 'none' }, { value: 'off' }],
  ];
  for (const [intent, want] of intents) {
    test(JSON.stringify(intent ?? null), () => assert.deepEqual(fromAnthropicIntent(intent), want));
  }
});

describe('withAliasDefault', () => {
  const off: ReasoningWant = { value: 'off' };
  const onLow: ReasoningWant = { value: 'on', effort: 'low' };
  const table: [
    string,
    ReasoningWant | undefined,
    boolean,
    'on' | 'off' | 'auto' | undefined,
    ReasoningWant | undefined,
  ][] = [
    ['the client wins over the alias', onLow, false, 'off', onLow],
    ['the client wins over an auto alias', off, false, 'auto', off],
    ['no client value: the alias default', undefined, false, 'off', { value: 'off' }],
    ['no client value: alias on', undefined, false, 'on', { value: 'on' }],
    ['an explicit client auto wins over the alias', undefined, true, 'off', undefined],
    ['alias auto leaves the body alone', undefined, false, 'auto', undefined],
    ['no alias setting', undefined, false, undefined, undefined],
  ];
  for (const [name, client, saidAuto, alias, expected] of table) {
    test(name, () => assert.deepEqual(withAliasDefault(client, saidAuto, alias), expected));
  }

  test('end to end: a body with an OpenRouter object keeps the alias default out', () => {
    const read = readReasoningSwitch({ reasoning: { max_tokens: 100 } }, 'chat');
    assert.equal(withAliasDefault(read.want, read.clientSaidAuto, 'off'), undefined);
  });
});
