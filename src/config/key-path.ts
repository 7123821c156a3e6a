/**
 * Key paths in validation messages (`reasoning_rules[2].params.token`), spelled like the config
 * loader's own (`config/schema.ts` childPath), without importing the loader: these modules are
 * what the loader calls, and bridges do not depend on config code.
 */
export function keyPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  const part = /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
  if (!base) return part.startsWith('"') ? `[${part}]` : part;
  return part.startsWith('"') ? `${base}[${part}]` : `${base}.${part}`;
}

/** A value as a validation message names it: `a list`, `a mapping`, `number 3`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${JSON.stringify(value)}`;
}

export type KeyPathProblem = { path: string; message: string };
