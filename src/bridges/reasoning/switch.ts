/**
 * The one reasoning switch of a request, read from the spellings clients use:
 *
 * - `reasoning: "off" | "on" | "auto"` — the gateway's own field (a string). It never reaches a
 *   backend, so the caller strips it (`stripGatewayField`).
 * - `reasoning_effort` — OpenAI's field: `none` / `minimal` mean off, any other level means on
 *   at that level.
 * - Responses' `reasoning: { effort }` object — the same mapping.
 * - the Anthropic bridge's `ReasoningIntent` (`fromAnthropicIntent`).
 *
 * On chat and completions an OBJECT `reasoning` is OpenRouter's own field, and a boolean
 * `chat_template_kwargs.enable_thinking` / `.thinking` is the template switch itself: the
 * client already spoke to the backend in its own terms, so the switch reads as an explicit
 * `auto` (the body goes as sent, and the alias default stays out of it).
 *
 * Precedence inside one body: the gateway string wins over `reasoning_effort` (it is the more
 * deliberate of the two), except that `reasoning: "on"` takes its level from `reasoning_effort`.
 */
import { isObject } from '../../json.ts';
import type { ReasoningIntent } from '../anthropic/types.ts';
import type { ReasoningWant } from '../../config/reasoning-types.ts';

export type { ReasoningWant } from '../../config/reasoning-types.ts';

export type SwitchKind = 'chat' | 'completions' | 'responses';

export interface ReasoningSwitch {
  /** Undefined = nothing asked (or `auto`): the body goes as the client wrote it. */
  want?: ReasoningWant;
  /** Set when the client's switch cannot be read; the route answers 400 naming `param`. */
  invalid?: { message: string; param: string };
  /** The body carries the gateway-only string `reasoning`, which must not reach a backend. */
  stripGatewayField: boolean;
  /**
   * The client said `auto` in so many words, or controlled reasoning in the backend's own
   * spelling: the alias default must not override it (see `withAliasDefault`).
   */
  clientSaidAuto: boolean;
}

/** Levels that mean "no reasoning" in OpenAI's vocabulary. */
const OFF_EFFORTS = new Set(['none', 'minimal']);

/** An effort string as a want, or a problem for `param`. */
function fromEffort(
  effort: unknown,
  param: string,
): { want?: ReasoningWant; invalid?: { message: string; param: string } } {
  if (effort === undefined || effort === null) return {};
  if (typeof effort !== 'string' || effort.trim() === '') {
    return {
      invalid: { param, message: `${param} must be a non-empty string such as "none", "low", "medium" or "high"` },
    };
  }
  const level = effort.trim().toLowerCase();
  return { want: OFF_EFFORTS.has(level) ? { value: 'off' } : { value: 'on', effort: level } };
}

/** The client drove the chat template's own thinking switch (`enable_thinking`, DeepSeek's `thinking`). */
function hasTemplateSwitch(body: Record<string, unknown>): boolean {
  const kwargs = body.chat_template_kwargs;
  return isObject(kwargs) && (typeof kwargs.enable_thinking === 'boolean' || typeof kwargs.thinking === 'boolean');
}

export function readReasoningSwitch(body: Record<string, unknown>, kind: SwitchKind): ReasoningSwitch {
  const raw = body.reasoning;
  const effort = fromEffort(body.reasoning_effort, 'reasoning_effort');

  if (typeof raw === 'string') {
    const value = raw.trim().toLowerCase();
    if (value === 'auto') return { stripGatewayField: true, clientSaidAuto: true };
    if (value === 'off') return { want: { value: 'off' }, stripGatewayField: true, clientSaidAuto: false };
    if (value === 'on') {
      if (effort.invalid) return { invalid: effort.invalid, stripGatewayField: true, clientSaidAuto: false };
      // `reasoning: "on"` with `reasoning_effort: "none"` is contradictory; "on" wins, without a level
      const level = effort.want?.value === 'on' ? effort.want.effort : undefined;
      return {
        want: level ? { value: 'on', effort: level } : { value: 'on' },
        stripGatewayField: true,
        clientSaidAuto: false,
      };
    }
    return {
      invalid: { param: 'reasoning', message: `reasoning must be "off", "on" or "auto" (got ${JSON.stringify(raw)})` },
      stripGatewayField: true,
      clientSaidAuto: false,
    };
  }

  if (isObject(raw)) {
    // chat / completions: OpenRouter's field, the client's own business
    if (kind !== 'responses') return { stripGatewayField: false, clientSaidAuto: true };
    const fromObject = fromEffort(raw.effort, 'reasoning.effort');
    if (fromObject.invalid || fromObject.want)
      return { ...fromObject, stripGatewayField: false, clientSaidAuto: false };
    // `{ summary: "auto" }` alone says nothing about whether to think: fall through to reasoning_effort
  } else if (raw !== undefined && raw !== null) {
    const wanted = kind === 'responses' ? 'an object with "effort"' : "an object (OpenRouter's)";
    return {
      invalid: { param: 'reasoning', message: `reasoning must be "off", "on", "auto" or ${wanted}` },
      stripGatewayField: false,
      clientSaidAuto: false,
    };
  }

  if (effort.invalid || effort.want) return { ...effort, stripGatewayField: false, clientSaidAuto: false };
  if (kind !== 'responses' && hasTemplateSwitch(body)) return { stripGatewayField: false, clientSaidAuto: true };
  return { stripGatewayField: false, clientSaidAuto: false };
}

/**
 * The Anthropic bridge's intent as a want. Anthropic's `max` effort has no OpenAI twin; it
 * becomes `xhigh` (OpenRouter's and newer OpenAI models' top level), which rules with an
 * `efforts` list clamp down to what their model takes.
 */
export function fromAnthropicIntent(intent: ReasoningIntent | undefined): ReasoningWant | undefined {
  if (!intent) return undefined;
  switch (intent.mode) {
    case 'off':
      return { value: 'off' };
    case 'on':
      return intent.budgetTokens === undefined ? { value: 'on' } : { value: 'on', budgetTokens: intent.budgetTokens };
    case 'effort': {
      const level = intent.effort.trim().toLowerCase();
      if (OFF_EFFORTS.has(level)) return { value: 'off' };
      return { value: 'on', effort: level === 'max' ? 'xhigh' : level };
    }
  }
}

/**
 * The switch after the alias's default. The client's own value wins; so does an explicit
 * `auto` (or the client driving the backend's own reasoning field): a client that says "leave
 * it to the model" is as explicit as one that says "off", and an alias default must not
 * rewrite what the client chose to send. `auto` as the alias default leaves the body alone.
 */
export function withAliasDefault(
  client: ReasoningWant | undefined,
  clientSaidAuto: boolean,
  aliasDefault: 'on' | 'off' | 'auto' | undefined,
): ReasoningWant | undefined {
  if (client) return client;
  if (clientSaidAuto) return undefined;
  if (aliasDefault === 'on' || aliasDefault === 'off') return { value: aliasDefault };
  return undefined;
}
