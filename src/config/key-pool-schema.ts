/**
 * `api_keys: [k1, k2, …]` on a backend: a pool of keys the gateway rotates through
 * (backends/key-pool.ts), as an alternative to one `api_key`. The schema fragment (schema.ts
 * puts it in place) and the checks a schema cannot express. Problems never quote a key.
 */
import { childPath, type ConfigProblem } from './problems.ts';

/** The backend field of a key pool. */
export const keyPoolProperties = {
  api_keys: {
    type: 'array',
    minItems: 1,
    items: { type: 'string', minLength: 1, hint: 'must be a non-empty string' },
    hint: 'must be a non-empty list of keys (leave it out for none)',
  },
} as const;

/** `api_key` and `api_keys` both set, or one key listed twice. */
export function keyPoolProblems(b: Record<string, unknown>, path: string): ConfigProblem[] {
  const keys = b.api_keys;
  if (!Array.isArray(keys)) return [];
  const problems: ConfigProblem[] = [];
  if (b.api_key !== undefined) {
    const message = 'set either api_key or api_keys, not both (a pool of one key is api_keys: [key])';
    problems.push({ path: childPath(path, 'api_keys'), message });
  }
  const seen = new Map<unknown, number>();
  keys.forEach((key, i) => {
    const first = seen.get(key);
    if (first === undefined) seen.set(key, i);
    else
      problems.push({ path: childPath(childPath(path, 'api_keys'), i), message: `the same key as api_keys[${first}]` });
  });
  return problems;
}
