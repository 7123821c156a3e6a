/**
 * Shapes shared by the reasoning-control modules: what a client wants of a model's reasoning,
 * and the rules that say how a backend's model is switched.
 *
 * Every backend spells "think / do not think" its own way, so the gateway keeps one switch per
 * request (`ReasoningWant`) and an ordered rule list that picks, per serving backend and model
 * id, the spelling (`ReasoningMechanism`) to write into the body.
 */

/**
 * What the request asks of the model's reasoning once every client spelling is folded in.
 * `effort` is an OpenAI-style level (`low`, `medium`, `high`, ...); `budgetTokens` the
 * Anthropic-style thinking budget. Both only refine `on`.
 */
export type ReasoningWant = { value: 'on' | 'off'; effort?: string; budgetTokens?: number };

/** How a backend's model is told to think or not; see `apply.ts` for what each one writes. */
export type ReasoningMechanism =
  'enable_thinking' | 'reasoning_effort' | 'nothink_token' | 'prefill' | 'openrouter_reasoning' | 'none';

/** Every mechanism, in the order the docs list them (validation messages name them in this order). */
export const REASONING_MECHANISMS: readonly ReasoningMechanism[] = Object.freeze([
  'enable_thinking',
  'reasoning_effort',
  'nothink_token',
  'prefill',
  'openrouter_reasoning',
  'none',
]);

/**
 * One line of the rule list. `model` is a glob (`*` any run, `?` one character) over the
 * backend's own model id, compared case-insensitively (the same model is `Qwen/Qwen3-8B` on
 * vLLM and `qwen3:8b` on Ollama); `backends` limits the rule to backends by name (omitted = all).
 * The first enabled rule that matches wins.
 */
export interface ReasoningRule {
  model: string;
  backends?: string[];
  mechanism: ReasoningMechanism;
  params?: Record<string, unknown>;
  /** Default true; a disabled rule is skipped as if it were not there. */
  enabled?: boolean;
}
