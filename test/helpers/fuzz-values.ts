/**
 * Odd values and JSON mutations for the HTTP fuzz: wrong types, nulls, huge numbers, deep
 * nesting, unicode, duplicate keys, truncation. Pure: everything from the given random source.
 */
export type Rng = () => number;

export const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
export const chance = (rng: Rng, p: number): boolean => rng() < p;
export const int = (rng: Rng, lo: number, hi: number): number => lo + Math.floor(rng() * (hi - lo + 1));

const ODD_STRINGS = [
  '',
  ' ',
  'x',
  '\u0000',
  '\ud800',
  'é\u200b\u202eabc',
  '𝕏'.repeat(50),
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '%00',
  '%zz',
  'a'.repeat(5000),
  'null',
  '1e999',
  '{"a":1}',
  'NaN',
  'true',
  '\r\n\r\nX-Injected: 1',
  '${HOME}',
  '💥',
];

const ROLES = ['user', 'assistant', 'system', 'tool', 'developer', 'x'];

function deep(depth: number, leaf: unknown = 1): unknown {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 ? { a: v } : [v];
  return v;
}

/** One value of some odd type. */
export function oddValue(rng: Rng): unknown {
  switch (int(rng, 0, 15)) {
    case 0:
      return null;
    case 1:
      return pick(rng, [true, false]);
    case 2:
      return pick(rng, [0, -1, 1.5, -0, 1e308, -1e308, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, 4294967296, 1e-320]);
    case 3:
      return pick(rng, ODD_STRINGS);
    case 4:
      return [];
    case 5:
      return {};
    case 6:
      return [pick(rng, ODD_STRINGS), null, 3];
    case 7:
      return { type: pick(rng, ['text', 'image_url', 'tool_use', 'x']), text: pick(rng, ODD_STRINGS) };
    case 8:
      return deep(int(rng, 10, 400));
    case 9:
      return Array.from({ length: int(rng, 50, 3000) }, (_, i) => i);
    case 10:
      return { role: pick(rng, ROLES), content: oddShallow(rng) };
    case 11:
      return [{ role: 'user', content: oddShallow(rng) }];
    case 12:
      return { __proto__: { polluted: true }, constructor: { prototype: { x: 1 } } };
    case 13:
      return pick(rng, ['stream', 'model', 'input', 'messages']);
    case 14:
      return Object.fromEntries(Array.from({ length: int(rng, 1, 40) }, (_, i) => [`k${i}`, i]));
    default:
      return 'x'.repeat(int(rng, 1, 200_000));
  }
}

function oddShallow(rng: Rng): unknown {
  return pick(rng, [
    null,
    1,
    '',
    'hi',
    [],
    {},
    [{ type: 'text', text: 1 }],
    [{ type: 'image_url', image_url: 'nope' }],
    [{ type: 'tool_result', tool_use_id: null, content: [] }],
    [{ type: 'input_image', image_url: 'data:,' }],
    true,
  ]);
}

type Path = (string | number)[];

function paths(value: unknown, prefix: Path = [], out: Path[] = [], depth = 0): Path[] {
  if (depth > 6) return out;
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      out.push([...prefix, i]);
      paths(v, [...prefix, i], out, depth + 1);
    });
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      out.push([...prefix, k]);
      paths(v, [...prefix, k], out, depth + 1);
    }
  }
  return out;
}

function setAt(root: any, path: Path, value: unknown, remove: boolean): void {
  let node = root;
  for (const key of path.slice(0, -1)) node = node?.[key];
  if (!node || typeof node !== 'object') return;
  const last = path[path.length - 1]!;
  if (remove) {
    if (Array.isArray(node) && typeof last === 'number') node.splice(last, 1);
    else delete node[last];
  } else node[last] = value;
}

const EXTRA_KEYS = [
  'stream',
  'stream_options',
  'n',
  'tools',
  'tool_choice',
  'max_tokens',
  'temperature',
  'top_p',
  'stop',
  'response_format',
  'user',
  'metadata',
  'store',
  'background',
  'previous_response_id',
  'thread',
  'system',
  'logprobs',
  'reasoning',
  'reasoning_effort',
  'seed',
  'params',
  'images',
  'files',
  'prompt',
  'input',
  'size',
  'encoding_format',
  'dimensions',
  'voice',
  'response_format',
  'include',
  'instructions',
  'max_output_tokens',
  'thinking',
  'tool_choice',
];

/** The body with one to four fields changed, removed or added (a deep copy). */
export function mutateBody(rng: Rng, body: unknown): unknown {
  let out: any = structuredClone(body);
  const n = int(rng, 1, 4);
  for (let i = 0; i < n; i++) {
    const all = paths(out);
    const r = rng();
    if (r < 0.08) out = oddValue(rng);
    else if (r < 0.3 || all.length === 0) {
      if (out && typeof out === 'object' && !Array.isArray(out)) out[pick(rng, EXTRA_KEYS)] = oddValue(rng);
    } else setAt(out, pick(rng, all), oddValue(rng), chance(rng, 0.2));
  }
  return out;
}

/** Text-level damage to serialised JSON: duplicate keys, truncation, raw big numbers, garbage. */
export function mutateText(rng: Rng, text: string): string | Buffer {
  switch (int(rng, 0, 11)) {
    case 0:
      return text.startsWith('{') ? `{"model":${JSON.stringify(pick(rng, ODD_STRINGS))},${text.slice(1)}` : text;
    case 1:
      return text.startsWith('{') ? `${text.slice(0, -1)},"stream":true,"stream":"yes"}` : text;
    case 2:
      return text.slice(0, int(rng, 0, Math.max(0, text.length - 1)));
    case 3:
      return text.replace(/:(\d+)/, ':123456789012345678901234567890');
    case 4:
      return `${text}garbage`;
    case 5:
      return `\ufeff${text}`;
    case 6:
      return Buffer.concat([
        Buffer.from(text.slice(0, 10)),
        Buffer.from([0xff, 0xfe, 0xc3]),
        Buffer.from(text.slice(10)),
      ]);
    case 7:
      return '['.repeat(int(rng, 1000, 200_000));
    case 8:
      return `{"a":${'{"a":'.repeat(int(rng, 500, 20_000))}1${'}'.repeat(20_000)}`;
    case 9:
      return pick(rng, ['', 'null', '[]', '"x"', '1', 'true', '{}', ' ', '{"__proto__":{"x":1}}', 'NaN']);
    case 10:
      return text.replace(/"([a-z_]+)":/, '"$1":1e400,"$1":');
    default:
      return text.replace(/"/, "'");
  }
}
