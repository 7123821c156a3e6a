/**
 * The body edits that carry out a reasoning want on one backend, as top-level member → raw
 * JSON text (null = remove), for `editTopLevel` on the client's raw body: every member this does
 * not name keeps the client's bytes. `messages` is replaced only by `nothink_token` and
 * `prefill`; a merged `chat_template_kwargs` / OpenRouter `reasoning` object is re-serialised
 * from the parsed body (its own members are small scalars, nothing JSON.parse would round).
 *
 * `applied` is the header value saying what was done: `off:enable_thinking`, `on:prefill`,
 * ..., or `unsupported` when a switch was asked but nothing could carry it (no rule, a `none`
 * rule, a mechanism the body kind cannot take). It never fails a call: an unsupported switch
 * forwards the body as it is. A mechanism whose "on" is the model's own default (`prefill`,
 * `nothink_token` without `on_token`) reports `on:<mechanism>` with no edit: the want is met.
 */
import { isObject } from '../../json.ts';
import { messagesWithPrefill, messagesWithToken, promptWithToken } from './apply-messages.ts';
import type { ReasoningRule, ReasoningWant } from '../../config/reasoning-types.ts';

export type EditKind = 'chat' | 'completions';

export interface ReasoningEdits {
  edits: Map<string, string | null>;
  applied?: string;
}

type Json = Record<string, unknown>;
type Params = Record<string, unknown>;

const DEFAULT_THINK_PREFILL = '<think>\n\n</think>\n\n';
const DEFAULT_NOTHINK_TOKEN = '/nothink';

/** OpenAI's effort levels, least to most; used to clamp a level to what a model takes. */
const EFFORT_ORDER = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'];

function str(params: Params, key: string): string | undefined {
  const v = params[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * An Anthropic-style budget as an effort level, for backends that only take levels. The steps
 * follow Claude Code's budgets: "think" (~4k) low, "think hard" (~10k) medium, above that high.
 */
export function effortForBudget(budget: number): string {
  if (budget <= 4096) return 'low';
  if (budget <= 16384) return 'medium';
  return 'high';
}

/** `level` if the model takes it, else the nearest level it does take (ties: the lower one). */
export function clampEffort(level: string, allowed: readonly string[] | undefined): string {
  if (!allowed || allowed.length === 0 || allowed.includes(level)) return level;
  const rank = EFFORT_ORDER.indexOf(level);
  if (rank < 0) return allowed[allowed.length - 1];
  let best = allowed[0];
  let bestDistance = Infinity;
  for (const candidate of [...allowed].sort((a, b) => EFFORT_ORDER.indexOf(a) - EFFORT_ORDER.indexOf(b))) {
    const r = EFFORT_ORDER.indexOf(candidate);
    if (r < 0) continue;
    const distance = Math.abs(r - rank);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** The client's chat_template_kwargs with `key` set, keeping its other members and their order. */
function kwargsWith(body: Json, key: string, value: unknown): string {
  const own = isObject(body.chat_template_kwargs) ? body.chat_template_kwargs : {};
  return JSON.stringify({ ...own, [key]: value });
}

/** The level a `reasoning_effort` rule sends. */
function effortLevel(want: ReasoningWant, params: Params): string {
  const efforts = Array.isArray(params.efforts) ? (params.efforts as string[]) : undefined;
  if (want.value === 'off') return clampEffort(str(params, 'off') ?? 'minimal', efforts);
  const asked = want.effort ?? (want.budgetTokens !== undefined ? effortForBudget(want.budgetTokens) : undefined);
  return clampEffort(asked ?? str(params, 'on') ?? 'high', efforts);
}

/** OpenRouter's `reasoning` object for the want, merged into the client's own if it sent one. */
function openRouterReasoning(body: Json, want: ReasoningWant, params: Params, gatewayString: boolean): string {
  let ours: Json;
  if (want.value === 'off') ours = isObject(params.off) ? params.off : { enabled: false };
  else if (want.effort !== undefined) ours = { effort: want.effort };
  else if (want.budgetTokens !== undefined) ours = { max_tokens: want.budgetTokens };
  else ours = isObject(params.on) ? params.on : { enabled: true };
  // keep the client's other members (`exclude`, ...); drop the ones that would contradict ours
  // (OpenRouter takes effort OR max_tokens, and `enabled: false` with either is ambiguous)
  const base: Json = !gatewayString && isObject(body.reasoning) ? { ...body.reasoning } : {};
  delete base.effort;
  delete base.max_tokens;
  delete base.enabled;
  return JSON.stringify({ ...base, ...ours });
}

/** Edits for one mechanism, or undefined when it cannot apply to this body. */
function mechanismEdits(
  body: Json,
  kind: EditKind,
  want: ReasoningWant,
  rule: ReasoningRule,
  stripGatewayField: boolean,
): Map<string, string | null> | undefined {
  const params: Params = rule.params ?? {};
  const edits = new Map<string, string | null>();
  switch (rule.mechanism) {
    case 'enable_thinking':
      edits.set('chat_template_kwargs', kwargsWith(body, str(params, 'key') ?? 'enable_thinking', want.value === 'on'));
      return edits;

    case 'reasoning_effort': {
      const level = effortLevel(want, params);
      edits.set('reasoning_effort', JSON.stringify(level));
      if (params.template_kwarg === true)
        edits.set('chat_template_kwargs', kwargsWith(body, 'reasoning_effort', level));
      return edits;
    }

    case 'nothink_token': {
      const token = want.value === 'off' ? (str(params, 'token') ?? DEFAULT_NOTHINK_TOKEN) : str(params, 'on_token');
      if (token === undefined) return edits; // "on" is the model's default
      if (kind === 'chat') {
        const messages = messagesWithToken(body.messages, token);
        if (!messages) return undefined;
        if (messages !== body.messages) edits.set('messages', JSON.stringify(messages));
      } else {
        const prompt = promptWithToken(body.prompt, token);
        if (prompt === undefined) return undefined;
        if (prompt !== body.prompt) edits.set('prompt', JSON.stringify(prompt));
      }
      return edits;
    }

    case 'prefill': {
      // a completions prompt is free text: there is no assistant turn to prefill
      if (kind !== 'chat') return undefined;
      if (want.value === 'on') return edits;
      const messages = messagesWithPrefill(
        body.messages,
        typeof params.text === 'string' && params.text !== '' ? params.text : DEFAULT_THINK_PREFILL,
      );
      if (!messages) return undefined;
      edits.set('messages', JSON.stringify(messages));
      // vLLM (and transformers) continue a final assistant turn only when told to
      if (params.continue_final_message === true) {
        edits.set('continue_final_message', 'true');
        edits.set('add_generation_prompt', 'false');
      }
      return edits;
    }

    case 'openrouter_reasoning':
      edits.set('reasoning', openRouterReasoning(body, want, params, stripGatewayField));
      // one spelling reaches OpenRouter, so the two cannot disagree
      if (body.reasoning_effort !== undefined) edits.set('reasoning_effort', null);
      return edits;

    case 'none':
      return undefined;
  }
}

export function reasoningEdits(
  body: Record<string, unknown>,
  kind: EditKind,
  want: ReasoningWant | undefined,
  rule: ReasoningRule | undefined,
  stripGatewayField: boolean,
): ReasoningEdits {
  const edits = new Map<string, string | null>();
  if (stripGatewayField) edits.set('reasoning', null);
  if (!want) return { edits };
  const own = rule ? mechanismEdits(body, kind, want, rule, stripGatewayField) : undefined;
  if (!rule || !own) return { edits, applied: 'unsupported' };
  for (const [key, value] of own) edits.set(key, value);
  return { edits, applied: `${want.value}:${rule.mechanism}` };
}
