/**
 * Structural comparison of a body against a real capture: the actual value must have every
 * field the fixture has, at every level, with the same JSON type. Arrays are compared by their
 * first element. Extra fields in the actual value are allowed.
 */
import { AssertionError } from 'node:assert';

export type JsonType = 'null' | 'array' | 'object' | 'string' | 'number' | 'boolean' | 'undefined';

export function jsonType(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const t = typeof value;
  if (t === 'string' || t === 'number' || t === 'boolean' || t === 'object') return t;
  return 'undefined';
}

export interface ShapeOptions {
  /** Paths (e.g. `$.choices[0].logprobs`) the actual value may lack or type differently. */
  ignore?: readonly string[];
}

/** The path and reason of the first difference, or undefined when the shapes agree. */
export function firstShapeDifference(
  actual: unknown,
  fixture: unknown,
  path = '$',
  opts: ShapeOptions = {},
): string | undefined {
  if (opts.ignore?.includes(path)) return undefined;
  const want = jsonType(fixture);
  const got = jsonType(actual);
  if (want !== got) return `${path}: expected ${want}, got ${got}`;
  if (want === 'array') {
    const f = fixture as unknown[];
    const a = actual as unknown[];
    if (f.length === 0) return undefined;
    if (a.length === 0) return `${path}: expected a non-empty array (the fixture's first element is ${jsonType(f[0])})`;
    return firstShapeDifference(a[0], f[0], `${path}[0]`, opts);
  }
  if (want === 'object') {
    const f = fixture as Record<string, unknown>;
    const a = actual as Record<string, unknown>;
    for (const key of Object.keys(f)) {
      const childPath = `${path}.${key}`;
      if (opts.ignore?.includes(childPath)) continue;
      if (!Object.hasOwn(a, key)) return `${childPath}: missing (fixture has ${jsonType(f[key])})`;
      const diff = firstShapeDifference(a[key], f[key], childPath, opts);
      if (diff) return diff;
    }
  }
  return undefined;
}

/** Throws an AssertionError naming the path of the first difference between the shapes. */
export function assertSameShape(actual: unknown, fixture: unknown, path = '$', opts: ShapeOptions = {}): void {
  const diff = firstShapeDifference(actual, fixture, path, opts);
  if (diff)
    throw new AssertionError({
      message: `shape differs at ${diff}`,
      actual,
      expected: fixture,
      operator: 'assertSameShape',
    });
}
