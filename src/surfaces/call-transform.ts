/**
 * The per-call body transform of chat-shaped calls: the reasoning switch the client asked for
 * (or the alias's default) applied through the first rule matching the serving backend and
 * its model, and the sampling defaults (client > alias > backend). Rules (config.yaml, or the
 * store's copy, then the built-in defaults) are compiled once per configuration.
 */
import type { AliasDefaults, BackendSpec, GatewayConfig } from '../config/types.ts';
import { reasoningEdits } from '../bridges/reasoning/apply.ts';
import {
  compileRules,
  DEFAULT_REASONING_RULES,
  matchRule,
  type CompiledRules,
  type ReasoningRule,
} from '../bridges/reasoning/rules.ts';
import { readReasoningSwitch, withAliasDefault, type ReasoningWant } from '../bridges/reasoning/switch.ts';
import { badRequest } from '../errors.ts';
import { samplingEdits } from '../bridges/sampling.ts';
import type { BodyEdits, BodyTransform } from './body-transform.ts';

export interface SwitchRequest {
  /** What the client asked for (undefined: nothing, or auto). */
  want?: ReasoningWant;
  /** The client said `auto` explicitly (the alias default then stays out). */
  saidAuto: boolean;
  /** The body carries the gateway-only `reasoning` string, which no backend may see. */
  stripGatewayField: boolean;
}

/** The switch a body asks for; a spelling the gateway does not know is the client's 400. */
export function switchRequest(
  body: Record<string, unknown>,
  kind: 'chat' | 'completions' | 'responses',
): SwitchRequest {
  const read = readReasoningSwitch(body, kind);
  if (read.invalid) throw badRequest(read.invalid.message, read.invalid.param, 'invalid_reasoning');
  return { want: read.want, saidAuto: read.clientSaidAuto, stripGatewayField: read.stripGatewayField };
}

const NOTHING: BodyEdits = Object.freeze({});

export class CallTransform implements BodyTransform {
  constructor(
    private readonly kind: 'chat' | 'completions',
    private readonly want: ReasoningWant | undefined,
    private readonly strip: boolean,
    private readonly aliasSampling: Record<string, unknown> | undefined,
    private readonly rules: CompiledRules,
  ) {}

  edits(parsed: Record<string, unknown>, backend: BackendSpec, model: string): BodyEdits {
    // the common call: no switch, no defaults — nothing to work out, nothing allocated
    if (!this.want && !this.strip && !this.aliasSampling && !backend.sampling_defaults) return NOTHING;
    const rule = this.want ? matchRule(this.rules, model, backend.name) : undefined;
    const reasoning = reasoningEdits(parsed, this.kind, this.want, rule, this.strip);
    const sampling = samplingEdits(parsed, this.aliasSampling, backend.sampling_defaults);
    if (!sampling.size) return { edits: reasoning.edits, reasoning: reasoning.applied };
    // the switch's own edits win over a default for the same key
    for (const [key, value] of reasoning.edits) sampling.set(key, value);
    return { edits: sampling, reasoning: reasoning.applied };
  }
}

/** Builds each call's transform from the live configuration (rules compiled once per config). */
export class TransformFactory {
  private compiled?: { from: GatewayConfig['reasoning_rules']; rules: CompiledRules };

  constructor(private readonly config: () => GatewayConfig) {}

  forCall(kind: 'chat' | 'completions', alias: string | undefined, request: SwitchRequest): BodyTransform {
    const defaults: AliasDefaults | undefined =
      alias !== undefined && Object.hasOwn(this.config().alias_defaults, alias)
        ? this.config().alias_defaults[alias]
        : undefined;
    const want = withAliasDefault(request.want, request.saidAuto, defaults?.reasoning);
    return new CallTransform(kind, want, request.stripGatewayField, defaults?.sampling_defaults, this.rules());
  }

  private rules(): CompiledRules {
    const from = this.config().reasoning_rules;
    if (this.compiled?.from !== from) {
      this.compiled = { from, rules: compileRules([...(from as ReasoningRule[]), ...DEFAULT_REASONING_RULES]) };
    }
    return this.compiled.rules;
  }
}
