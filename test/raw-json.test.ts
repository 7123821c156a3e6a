import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { editTopLevel, nestingDepthExceeds, topLevelValueText } from '../src/wire/raw-json.ts';
import { prng } from './helpers/prng.ts';

const edits = (entries: Record<string, string | null>) => new Map(Object.entries(entries));

/** Edits `text`, checks the result parses, and returns it. */
function edit(text: string, e: Record<string, string | null>): string {
  const out = editTopLevel(text, edits(e));
  JSON.parse(out);
  return out;
}

/** `text` with `find` (which must occur once) replaced: the expected result of an in-place edit. */
function replacedOnce(text: string, find: string, replacement: string): string {
  assert.equal(text.split(find).length, 2, `"${find}" occurs once in the fixture`);
  return text.replace(find, () => replacement);
}

describe('editTopLevel keeps every byte outside the edits', () => {
  test('big integers, -0, 1e400 and long fractions survive', () => {
    const text =
      '{"model":"alias","seed":12345678901234567891,"n":18446744073709551616,"z":-0,"huge":1e400,"p":0.10000000000000000555,"neg":-9223372036854775809}';
    const out = edit(text, { model: '"real-model"' });
    assert.equal(out, replacedOnce(text, '"alias"', '"real-model"'));
    assert.equal(topLevelValueText(out, 'seed'), '12345678901234567891');
    assert.equal(topLevelValueText(out, 'huge'), '1e400');
    assert.equal(topLevelValueText(out, 'z'), '-0');
  });

  test('unicode escapes and raw non-ASCII', () => {
    const text =
      '{"messages":[{"role":"user","content":"h\\u00e9llo \\ud83d\\ude00 héllo 😀 日本語 \\"q\\" \\\\ \\/ \\n"}],"model":"a","\\u00e9t\\u00e9":"été"}';
    const out = edit(text, { model: '"b"', stream: 'true' });
    assert.equal(out, replacedOnce(text, '"model":"a"', '"model":"b"').slice(0, -1) + ',"stream":true}');
    assert.equal(JSON.parse(out)['été'], 'été');
    assert.equal(edit(text, { été: '1' }), text.replace('"été"}', '1}'), 'an escaped name matches its decoded form');
  });

  test('whitespace and newlines everywhere', () => {
    const text =
      ' \r\n {\n\t"model" \r\n :\n "a" \n ,\t"messages" : [ { "content" : "x" } , 1 ]\n, "n"  :  -1.5e+3 \n}\n\t ';
    assert.equal(edit(text, { model: '"b"' }), replacedOnce(text, '"a"', '"b"'));
    assert.equal(edit(text, { n: '2' }), replacedOnce(text, '-1.5e+3', '2'));
    assert.equal(edit(text, { extra: '{}' }), text.replace('-1.5e+3', '-1.5e+3,"extra":{}'));
    assert.equal(
      edit(text, { model: null }),
      ' \r\n {\n\t"messages" : [ { "content" : "x" } , 1 ]\n, "n"  :  -1.5e+3 \n}\n\t ',
    );
    assert.equal(
      edit(text, { n: null }),
      ' \r\n {\n\t"model" \r\n :\n "a" \n ,\t"messages" : [ { "content" : "x" } , 1 ] \n}\n\t ',
    );
    assert.equal(edit(text, { messages: null }), ' \r\n {\n\t"model" \r\n :\n "a"\n, "n"  :  -1.5e+3 \n}\n\t ');
  });

  test('empty objects', () => {
    assert.equal(edit('{}', { model: '"m"' }), '{"model":"m"}');
    assert.equal(edit(' { \n } ', { a: '1', b: '[2]' }), ' { \n "a":1,"b":[2]} ');
    assert.equal(edit('{}', { a: null }), '{}');
  });

  test('returns the same text when nothing changes', () => {
    const text = '{ "model" : "m", "n": 1 }';
    assert.equal(editTopLevel(text, new Map()), text);
    assert.equal(editTopLevel(text, edits({ absent: null })), text);
    assert.equal(editTopLevel(text, edits({ model: '"m"', n: '1' })), text);
  });

  test('every value type can be replaced by every value type', () => {
    const values = [
      '"s"',
      '"with } ] , \\" inside"',
      '{"a":{"b":[1,{"c":"}"}]}}',
      '[1,[2,[3]],"]"]',
      '42',
      '-0.5e-7',
      'true',
      'false',
      'null',
      '{}',
      '[]',
      '""',
    ];
    for (const before of values) {
      for (const after of values) {
        const text = `{"first":1,"v":${before},"last":[0]}`;
        const out = edit(text, { v: after });
        assert.equal(out, `{"first":1,"v":${after},"last":[0]}`, `${before} → ${after}`);
        assert.deepEqual(JSON.parse(out).v, JSON.parse(after));
        const alone = edit(`{"v":${before}}`, { v: after });
        assert.equal(alone, `{"v":${after}}`);
        assert.equal(edit(`{"v":${before}}`, { v: null }), '{}');
      }
    }
  });
});

describe('removal', () => {
  const pretty = '{\n  "a": 1,\n  "b": [2],\n  "c": "3"\n}';

  test('first, middle, last and only member, with their commas', () => {
    assert.equal(edit(pretty, { a: null }), '{\n  "b": [2],\n  "c": "3"\n}');
    assert.equal(edit(pretty, { b: null }), '{\n  "a": 1,\n  "c": "3"\n}');
    assert.equal(edit(pretty, { c: null }), '{\n  "a": 1,\n  "b": [2]\n}');
    assert.equal(edit('{ "only" : true }', { only: null }), '{  }');
    assert.equal(edit('{"a":1,"b":2,"c":3}', { a: null }), '{"b":2,"c":3}');
    assert.equal(edit('{"a":1,"b":2,"c":3}', { b: null }), '{"a":1,"c":3}');
    assert.equal(edit('{"a":1,"b":2,"c":3}', { c: null }), '{"a":1,"b":2}');
  });

  test('several members at once, adjacent or not', () => {
    assert.equal(edit(pretty, { a: null, b: null }), '{\n  "c": "3"\n}');
    assert.equal(edit(pretty, { b: null, c: null }), '{\n  "a": 1\n}');
    assert.equal(edit(pretty, { a: null, c: null }), '{\n  "b": [2]\n}');
    assert.equal(edit(pretty, { a: null, b: null, c: null }), '{\n  \n}');
    assert.equal(edit('{"a":1,"b":2,"c":3,"d":4}', { a: null, c: null }), '{"b":2,"d":4}');
  });

  test('removing and adding together', () => {
    assert.equal(edit(pretty, { c: null, model: '"m"' }), '{\n  "a": 1,\n  "b": [2],"model":"m"\n}');
    assert.equal(edit(pretty, { a: null, b: null, c: null, model: '"m"' }), '{\n  "model":"m"\n}');
    assert.equal(edit(pretty, { a: null, model: '"m"', b: '0' }), '{\n  "b": 0,\n  "c": "3","model":"m"\n}');
  });
});

describe('duplicate and escaped names', () => {
  test('an edited name keeps only its first occurrence', () => {
    const text = '{"model":"a","x":1,"model":"b", "y":2 ,"model":"c"}';
    assert.equal(edit(text, { model: '"z"' }), '{"model":"z","x":1, "y":2}');
    assert.equal(edit(text, { model: null }), '{"x":1, "y":2}');
    assert.equal(edit('{"model":"a","model":"b"}', { model: '"a"' }), '{"model":"a"}');
    assert.equal(edit('{"model":"a","model":"b","x":0}', { model: null }), '{"x":0}');
  });

  test('duplicates of names not edited stay as they were', () => {
    const text = '{"x":1,"model":"a","x":2}';
    assert.equal(edit(text, { model: '"b"' }), '{"x":1,"model":"b","x":2}');
    assert.equal(edit(text, { model: null }), '{"x":1,"x":2}');
  });

  test('names are compared decoded', () => {
    assert.equal(edit('{"mo\\u0064el":"a","n":1}', { model: '"b"' }), '{"mo\\u0064el":"b","n":1}');
    assert.equal(edit('{"model":"a","mo\\u0064el":"b"}', { model: '"c"' }), '{"model":"c"}');
    assert.equal(edit('{"a\\"b":1}', { 'a"b': '2' }), '{"a\\"b":2}');
    assert.equal(edit('{"model\\\\":1}', { model: '2' }), '{"model\\\\":1,"model":2}');
    assert.equal(edit('{"x":1}', { 'new "name"': '2' }), '{"x":1,"new \\"name\\"":2}');
    assert.equal(topLevelValueText('{"\\u006dodel":"m"}', 'model'), '"m"');
  });
});

describe('topLevelValueText', () => {
  const text = '{ "messages": [{"stream_options": 1}], "stream_options" : { "include_usage" : false } , "n":3, "n":4 }';

  test('the raw text of the first occurrence; nested names do not count', () => {
    assert.equal(topLevelValueText(text, 'stream_options'), '{ "include_usage" : false }');
    assert.equal(topLevelValueText(text, 'n'), '3');
    assert.equal(topLevelValueText(text, 'include_usage'), undefined);
    assert.equal(topLevelValueText('{}', 'x'), undefined);
  });

  test("a nested edit: set stream_options.include_usage keeping the client's other options", () => {
    const inner = topLevelValueText(text, 'stream_options')!;
    const out = edit(text, { stream_options: editTopLevel(inner, edits({ include_usage: 'true', extra: '1' })) });
    assert.equal(out, text.replace('"include_usage" : false }', '"include_usage" : true,"extra":1 }'));
  });

  test('not an object → SyntaxError', () => {
    assert.throws(() => topLevelValueText('[1]', 'x'), SyntaxError);
    assert.throws(() => editTopLevel(' "x" ', edits({ a: '1' })), SyntaxError);
  });
});

describe('large and deep bodies', () => {
  test('a 10,000-deep value and a 2 MB string are skipped, not recursed into', () => {
    const deep = '['.repeat(10_000) + '"]]}"' + ']'.repeat(10_000);
    const big = 'x'.repeat(2_000_000);
    const text = `{"deep":${deep},"big":"${big}","model":"a"}`;
    const out = editTopLevel(text, edits({ model: '"b"', deep: null }));
    assert.equal(out, `{"big":"${big}","model":"b"}`);
  });
});

describe('nestingDepthExceeds', () => {
  test('depth counts objects and arrays; scalars are depth 0', () => {
    assert.equal(nestingDepthExceeds('1', 0), false);
    assert.equal(nestingDepthExceeds('"[{"', 0), false);
    assert.equal(nestingDepthExceeds('{}', 0), true);
    assert.equal(nestingDepthExceeds('{}', 1), false);
    assert.equal(nestingDepthExceeds('[[],[],{"a":[]}]', 2), true);
    assert.equal(nestingDepthExceeds('[[],[],{"a":[]}]', 3), false);
    assert.equal(nestingDepthExceeds('{"a":{"b":[1]}}', 2), true);
    assert.equal(nestingDepthExceeds('{"a":{"b":[1]}}', 3), false);
  });

  test('10,000 levels deep', () => {
    for (const [open, close] of [
      ['[', ']'],
      ['{"k":', '}'],
    ]) {
      const text = open!.repeat(10_000) + '0' + close!.repeat(10_000);
      JSON.parse(text);
      assert.equal(nestingDepthExceeds(text, 9_999), true);
      assert.equal(nestingDepthExceeds(text, 10_000), false);
      assert.equal(nestingDepthExceeds(text, 64), true);
    }
    const wide = '[' + '[],'.repeat(10_000) + '[]]';
    assert.equal(nestingDepthExceeds(wide, 2), false, 'siblings do not add up');
  });

  test('brackets inside strings do not count; escaped quotes do not end a string', () => {
    assert.equal(nestingDepthExceeds('["[[[[[[", "{{{{", "]]]]", "}}"]', 1), false);
    assert.equal(nestingDepthExceeds('{"a[[[":"{{{"}', 1), false);
    assert.equal(nestingDepthExceeds('["\\"[[[["]', 1), false, 'a \\" stays inside the string');
    assert.equal(nestingDepthExceeds('["\\\\", [[1]]]', 2), true, 'a \\\\ ends with the string closed');
    assert.equal(nestingDepthExceeds('["\\\\", [[1]]]', 3), false);
    assert.equal(
      nestingDepthExceeds('["\\\\\\"[[", []]', 2),
      false,
      '\\\\\\" is an escaped backslash then an escaped quote',
    );
    assert.equal(nestingDepthExceeds('["\\\\\\"[[", []]', 1), true);
    for (let run = 0; run <= 9; run++) {
      const text = `["${'\\\\'.repeat(run)}\\"[", "]"]`;
      assert.equal(nestingDepthExceeds(text, 1), false, `${run} escaped backslashes, then \\"`);
      const closed = `["${'\\\\'.repeat(run)}", [[]]]`;
      JSON.parse(closed);
      assert.equal(nestingDepthExceeds(closed, 2), true, `${run} escaped backslashes, then the closing quote`);
    }
    assert.equal(nestingDepthExceeds('["unclosed [[[', 1), false);
  });

  test('stray closers in text that is not JSON never hide later depth', () => {
    assert.equal(nestingDepthExceeds(']]]][[', 1), true);
  });
});

/** JSON tokens by regex: an oracle independent of raw-json.ts's scanner. */
const tokensOf = (text: string): string[] => text.match(/"(?:[^"\\]|\\.)*"|[{}[\],:]|[^\s{}[\],:"]+/g) ?? [];

/** The decoded top-level member names of an object, duplicates included. */
function topLevelNames(text: string): string[] {
  const tokens = tokensOf(text);
  const names: string[] = [];
  let depth = 0;
  tokens.forEach((t, i) => {
    if (t === '{' || t === '[') depth++;
    else if (t === '}' || t === ']') depth--;
    else if (depth === 1 && t.startsWith('"') && tokens[i + 1] === ':') names.push(JSON.parse(t));
  });
  return names;
}

function maxDepth(text: string): number {
  let depth = 0;
  let max = 0;
  for (const t of tokensOf(text)) {
    if (t === '{' || t === '[') max = Math.max(max, ++depth);
    else if (t === '}' || t === ']') depth--;
  }
  return max;
}

describe('randomised against JSON.parse', () => {
  const NAMES = ['model', 'stream', 'messages', 'seed', 'n', 'a', 'é', 'x y', 'q"'];

  function generator(random: () => number) {
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const ws = () => pick(['', '', '', ' ', '\n', '\r\n\t', '  ']);
    const escapeName = (name: string) =>
      JSON.stringify(name).replace(/[a-z]/g, (c) =>
        random() < 0.2 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c,
      );
    const stringLiteral = () => {
      const s = pick(['', 'hi', '{[', ']}', '"', '\\', '\\"', '\\\\"[', 'é😀', ',:', '\u0000\n']);
      return s === '"' && random() < 0.5 ? '"\\u0022"' : JSON.stringify(s);
    };
    const value = (depth: number): string => {
      const r = random();
      if (depth > 3 || r < 0.45) {
        return pick(['0', '-0', '12345678901234567891', '1e400', '-1.5E-3', 'true', 'false', 'null', stringLiteral()]);
      }
      const items = Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
      if (r < 0.7) return `[${ws()}${items.join(`${ws()},${ws()}`)}${ws()}]`;
      return `{${ws()}${items.map((v) => `${escapeName(pick(NAMES))}${ws()}:${ws()}${v}`).join(`${ws()},${ws()}`)}${ws()}}`;
    };
    const object = (): string => {
      const members = Array.from(
        { length: Math.floor(random() * 7) },
        () => `${ws()}${escapeName(pick(NAMES))}${ws()}:${ws()}${value(1)}${ws()}`,
      );
      return `${ws()}{${members.join(',') || ws()}}${ws()}`;
    };
    let serial = 0;
    const edits = (): Map<string, string | null> => {
      const e = new Map<string, string | null>();
      for (let k = Math.floor(random() * 4); k > 0; k--) {
        e.set(
          pick(NAMES),
          random() < 0.35 ? null : pick([`"edit-${serial}"`, `{"edit":${serial}}`, `[${serial}]`, `${serial}.5`]),
        );
        serial++;
      }
      return e;
    };
    return { object, edits };
  }

  test('1,000 random objects and edits', () => {
    for (const seed of [1, 2, 3]) {
      const random = prng(seed);
      const gen = generator(random);
      for (let round = 0; round < 1000 / 3; round++) {
        const text = gen.object();
        const e = gen.edits();
        const where = `seed ${seed} round ${round}: ${JSON.stringify(text)} ${JSON.stringify([...e])}`;
        const expected = JSON.parse(text);
        for (const [name, v] of e) {
          if (v === null) delete expected[name];
          else expected[name] = JSON.parse(v);
        }
        const out = editTopLevel(text, e);
        const actual = JSON.parse(out);
        assert.deepEqual(actual, expected, where);
        assert.deepEqual(Object.keys(actual), Object.keys(expected), `key order, ${where}`);
        const before = topLevelNames(text);
        const after = topLevelNames(out);
        assert.deepEqual(
          after.filter((n) => !e.has(n)),
          before.filter((n) => !e.has(n)),
          `other members, ${where}`,
        );
        for (const [name, v] of e)
          assert.equal(after.filter((n) => n === name).length, v === null ? 0 : 1, `one ${name}, ${where}`);
        for (const name of NAMES) {
          const v = e.get(name);
          if (v === undefined)
            assert.equal(topLevelValueText(out, name), topLevelValueText(text, name), `raw ${name}, ${where}`);
          else assert.equal(topLevelValueText(out, name), v ?? undefined, `edited ${name}, ${where}`);
        }
        if ([...e.values()].every((v) => v === null) && !NAMES.some((n) => e.has(n) && n in JSON.parse(text))) {
          assert.equal(out, text, `no change, ${where}`);
        }
        for (const t of [text, out]) {
          const depth = maxDepth(t);
          assert.equal(nestingDepthExceeds(t, depth), false, `depth ${depth}, ${where}`);
          assert.equal(nestingDepthExceeds(t, depth - 1), true, `depth ${depth}, ${where}`);
        }
      }
    }
  });
});
