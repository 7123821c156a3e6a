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
import { jsonProblem, whyForbidden } from '../config/sampling-problems.ts';

export { SAMPLING_FORBIDDEN_KEYS, samplingProblems } from '../config/sampling-problems.ts';

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
