/**
 * Sampling defaults: values an alias or a backend fills in when the client did not send them
 * (Qwen3 wants `temperature: 0.6, top_p: 0.95, top_k: 20`, llama.cpp's own defaults differ).
 * Precedence per key: the client, then the alias, then the backend. A key the client sent is
 * never touched, even as `null` (in OpenAI's API that asks for the server default on purpose).
 *
 * The keys a default may not name are the ones that make up the request rather than tune it:
 * - `model`, `messages`, `input`, `prompt`, `suffix`: the call's content. A default prompt is
 *   not a sampling value; it would change what is asked.
 * - `stream`, `stream_options`: how the answer travels, which the gateway's relays depend on.
 * - `tools`, `tool_choice`, `functions`, `function_call`: a default tool list would change the
 *   conversation (and the tool-call handling of the bridges) behind the client's back.
 * - `reasoning`, `reasoning_effort`, `chat_template_kwargs`: owned by the reasoning switch (the
 *   alias's `reasoning` setting and the rules), whose edits would overwrite such a default.
 * - anything starting with `_`: gateway-internal.
 */
import { describeValue, keyPath, type KeyPathProblem } from './reasoning/key-path.ts';

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
function whyForbidden(key: string): string | undefined {
  if (key.startsWith('_')) return 'keys starting with "_" are the gateway\'s own';
  if (!FORBIDDEN.has(key)) return undefined;
  if (key === 'stream' || key === 'stream_options') return 'is set by the client, not a default';
  if (key === 'reasoning' || key === 'reasoning_effort' || key === 'chat_template_kwargs') {
    return "belongs to the reasoning switch: use the alias's reasoning setting or a reasoning rule";
  }
  if (key.startsWith('tool') || key.startsWith('function')) return 'is part of the conversation, not a sampling value';
  return "is the request's content, not a default";
}

/**
 * Keys that say the same thing: a client that sent one must not get the other as a default
 * (OpenAI rejects both together; servers that take both pick one unpredictably).
 */
const SYNONYMS: readonly (readonly string[])[] = [['max_tokens', 'max_completion_tokens']];

function clientSentEquivalent(body: Record<string, unknown>, key: string): boolean {
  for (const group of SYNONYMS) {
    if (group.includes(key) && group.some((k) => Object.hasOwn(body, k))) return true;
  }
  return false;
}

/** A value JSON can carry as written (YAML's `.inf` / `.nan` cannot). */
function jsonProblem(value: unknown): string | undefined {
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

/**
 * The members to add to the client's body: each default key the client did not send, the
 * alias's value before the backend's, as JSON text for `editTopLevel`. Forbidden keys are
 * skipped here too (defence in depth: a store row may predate the validation). The values are
 * never null; the map is typed like the other edit maps (`string | null`) so a caller can merge
 * the reasoning edits (which remove members) into it and hand one map to `editTopLevel`.
 */
export function samplingEdits(
  body: Record<string, unknown>,
  aliasDefaults: Record<string, unknown> | undefined,
  backendDefaults: Record<string, unknown> | undefined,
): Map<string, string | null> {
  const edits = new Map<string, string | null>();
  for (const defaults of [aliasDefaults, backendDefaults]) {
    if (!defaults) continue;
    for (const [key, value] of Object.entries(defaults)) {
      if (edits.has(key) || Object.hasOwn(body, key) || whyForbidden(key) || jsonProblem(value)) continue;
      if (clientSentEquivalent(body, key)) continue;
      edits.set(key, JSON.stringify(value));
    }
  }
  return edits;
}
