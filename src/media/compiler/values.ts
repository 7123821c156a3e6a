/**
 * Turning a request value or a pin into what the input takes, and writing the prompt as JSON.
 *
 * Seeds go up to 2^63−1 (ComfyUI's INT primitives are 64-bit) and a JS number is exact only to
 * 2^53, so integers travel as `bigint` when they are larger, arrive as `bigint` or as decimal
 * text, and leave through `writeJson`, which prints a bigint's digits. A number beyond 2^53
 * is refused: its digits were lost before it got here.
 */
import type { InputDecl } from './object-info.ts';

export { writeJson } from '../../wire/exact-json.ts';

export type Coerced = { ok: true; value: unknown } | { ok: false; message: string };

const I64_MAX = 2n ** 63n - 1n;
const I64_MIN = -(2n ** 63n);
const MAX_CHOICES_SHOWN = 20;

/** A scalar ComfyUI can take as a literal; a list would be read as a link, an object is meaningless. */
export function isScalar(value: unknown): boolean {
  return ['string', 'number', 'bigint', 'boolean'].includes(typeof value);
}

/** Coerce to the declared type, or, with no declaration, to the type of the value the workflow has now. */
export function coerceValue(value: unknown, decl: InputDecl | undefined, current: unknown): Coerced {
  if (!isScalar(value)) return { ok: false, message: 'must be a single value, not a list or an object' };
  if (!decl) return coerceLikeCurrent(value, current);
  switch (decl.kind) {
    case 'INT':
      return withBounds(toInteger(value), decl);
    case 'FLOAT':
      return withBounds(toFloat(value), decl);
    case 'BOOLEAN':
      return toBoolean(value);
    case 'STRING':
      return { ok: true, value: typeof value === 'string' ? value : String(value) };
    case 'COMBO':
      return toChoice(value, decl.choices ?? []);
    case 'socket':
      return { ok: false, message: `takes a ${decl.type} link, not a value` };
  }
}

function coerceLikeCurrent(value: unknown, current: unknown): Coerced {
  if (typeof current === 'number' || typeof current === 'bigint') {
    if (typeof value === 'string' && /^\s*-?\d+\s*$/.test(value)) return toInteger(value);
    return toFloatOrInteger(value);
  }
  if (typeof current === 'boolean') return toBoolean(value);
  if (typeof current === 'string') return { ok: true, value: typeof value === 'string' ? value : String(value) };
  if (typeof value === 'bigint') return toInteger(value);
  if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) return toInteger(value);
  return { ok: true, value };
}

function toFloatOrInteger(value: unknown): Coerced {
  if (typeof value === 'bigint') return toInteger(value);
  if (typeof value === 'number' && Number.isInteger(value)) return toInteger(value);
  return toFloat(value);
}

/** An exact integer: `number` while safe, `bigint` above 2^53, refused outside int64. */
export function toInteger(value: unknown): Coerced {
  let big: bigint;
  if (typeof value === 'bigint') big = value;
  else if (typeof value === 'number') {
    if (!Number.isInteger(value)) return { ok: false, message: 'must be an integer' };
    if (!Number.isSafeInteger(value))
      return { ok: false, message: 'is too large to be exact as a JSON number; send it as a decimal string' };
    big = BigInt(value);
  } else if (typeof value === 'string' && /^\s*-?\d+\s*$/.test(value)) big = BigInt(value.trim());
  else return { ok: false, message: 'must be an integer' };
  if (big > I64_MAX || big < I64_MIN) return { ok: false, message: 'must fit in a signed 64-bit integer' };
  return { ok: true, value: normalizeInteger(big) };
}

export function normalizeInteger(big: bigint): number | bigint {
  return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
}

function toFloat(value: unknown): Coerced {
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'bigint') n = Number(value);
  else if (typeof value === 'string' && value.trim() !== '') n = Number(value);
  else return { ok: false, message: 'must be a number' };
  return Number.isFinite(n) ? { ok: true, value: n } : { ok: false, message: 'must be a number' };
}

function toBoolean(value: unknown): Coerced {
  if (typeof value === 'boolean') return { ok: true, value };
  if (value === 'true' || value === 'false') return { ok: true, value: value === 'true' };
  return { ok: false, message: 'must be true or false' };
}

function toChoice(value: unknown, choices: unknown[]): Coerced {
  // an empty list is a server with nothing of that kind installed (or a dump that lists none): accept
  if (choices.length === 0) return { ok: true, value: typeof value === 'string' ? value : String(value) };
  const hit = choices.find((c) => c === value || String(c) === String(value));
  if (hit !== undefined) return { ok: true, value: hit };
  const shown = choices.slice(0, MAX_CHOICES_SHOWN).map(String).join(', ');
  const more = choices.length > MAX_CHOICES_SHOWN ? `, … (${choices.length} options)` : '';
  return { ok: false, message: `must be one of: ${shown}${more}` };
}

/** ComfyUI's min/max, compared exactly for integers (the dump's bounds are floats, e.g. 2^64 as 1.8e19). */
function withBounds(result: Coerced, decl: InputDecl): Coerced {
  if (!result.ok) return result;
  const { min, max } = decl.options;
  const v = result.value as number | bigint;
  const below = typeof min === 'number' && Number.isFinite(min) && compare(v, min) < 0;
  const above = typeof max === 'number' && Number.isFinite(max) && compare(v, max) > 0;
  if (below) return { ok: false, message: `must be at least ${min}` };
  if (above) return { ok: false, message: `must be at most ${max}` };
  return result;
}

function compare(v: number | bigint, bound: number): number {
  if (typeof v === 'number') return v - bound;
  const b = BigInt(Math.trunc(bound));
  return v < b ? -1 : v > b ? 1 : 0;
}
