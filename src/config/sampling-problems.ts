/**
 * Which sampling defaults a config may hold (bridges/sampling.ts applies them; the keys a
 * default may not name are explained there). Pure.
 */
import { describeValue, keyPath, type KeyPathProblem } from './key-path.ts';

export const SAMPLING_FORBIDDEN_KEYS: readonly string[] = Object.freeze([
  'model',
  'messages',
  'input',
  'prompt',
  'suffix',
  'stream',
  'stream_options',
  'tools',
  'tool_choice',
  'functions',
  'function_call',
  'reasoning',
  'reasoning_effort',
  'chat_template_kwargs',
]);

const FORBIDDEN = new Set(SAMPLING_FORBIDDEN_KEYS);

/** Why a key cannot be a default, for the validation message. */
export function whyForbidden(key: string): string | undefined {
  if (key.startsWith('_')) return 'keys starting with "_" are the gateway\'s own';
  if (!FORBIDDEN.has(key)) return undefined;
  if (key === 'stream' || key === 'stream_options') return 'is set by the client, not a default';
  if (key === 'reasoning' || key === 'reasoning_effort' || key === 'chat_template_kwargs') {
    return "belongs to the reasoning switch: use the alias's reasoning setting or a reasoning rule";
  }
  if (key.startsWith('tool') || key.startsWith('function')) return 'is part of the conversation, not a sampling value';
  return "is the request's content, not a default";
}

/** A value JSON can carry as written (YAML's `.inf` / `.nan` cannot). */
export function jsonProblem(value: unknown): string | undefined {
  if (value === null) return 'must not be null (leave the key out for no default)';
  if (typeof value === 'number' && !Number.isFinite(value)) return 'must be a finite number';
  if (typeof value === 'bigint' || typeof value === 'function' || typeof value === 'symbol' || value === undefined) {
    return `is not a JSON value, got ${typeof value}`;
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      const p = item === null ? undefined : jsonProblem(item);
      if (p) return `has an item that ${p}`;
    }
  } else if (typeof value === 'object') {
    for (const inner of Object.values(value as object)) {
      const p = inner === null ? undefined : jsonProblem(inner);
      if (p) return `has a member that ${p}`;
    }
  }
  return undefined;
}

/** Problems of a `sampling_defaults` mapping at `path` (empty = valid). */
export function samplingProblems(raw: unknown, path: string): KeyPathProblem[] {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return [{ path, message: `must be a mapping of request fields to values, got ${describeValue(raw)}` }];
  }
  const problems: KeyPathProblem[] = [];
  for (const [key, value] of Object.entries(raw)) {
    const message = whyForbidden(key) ?? jsonProblem(value);
    if (message) problems.push({ path: keyPath(path, key), message });
  }
  return problems;
}
