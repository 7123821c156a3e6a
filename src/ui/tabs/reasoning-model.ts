/**
 * What the reasoning tab shows: the rule list in the order it is tried (the configured rules,
 * then the built-in defaults), and the resolver — for a model on a backend and a switch, the
 * rule that applies and the body the backend would get for a small sample request. The
 * resolver runs the gateway's own code: `matchRule` over the same compiled list, the call's
 * `TransformFactory` (alias default, rule, sampling defaults) and `upstreamBody`.
 */
import { createHash } from 'node:crypto';
import type { ReasoningRuleSpec } from '../../config/types.ts';
import {
  compileRules,
  DEFAULT_REASONING_RULES,
  matchRule,
  type CompiledRules,
  type ReasoningRule,
} from '../../bridges/reasoning/rules.ts';
import { withAliasDefault } from '../../bridges/reasoning/switch.ts';
import type { UiServices } from '../services.ts';
import { upstreamBody } from '../../surfaces/call-bytes.ts';
import { switchRequest, type TransformFactory } from '../../surfaces/call-transform.ts';
import { isAliasPattern } from '../../routing/aliases.ts';
import { kindOf } from '../../backends/kinds/index.ts';

export const SWITCHES = ['off', 'on', 'auto', 'none'] as const;
export type SwitchChoice = (typeof SWITCHES)[number];

export interface RuleRow {
  /** Place in the order rules are tried (0-based over both lists). */
  place: number;
  configured: boolean;
  /** Index within its own list (configured or built-in). */
  index: number;
  rule: ReasoningRule;
  enabled: boolean;
  paramsText: string;
  /** The rule the resolver found. */
  applies: boolean;
}

export interface ResolverInput {
  model: string;
  backend: string;
  switch: SwitchChoice;
  alias: string;
}

export interface ResolverResult {
  /** The first enabled rule for this model on this backend (whatever the switch). */
  rule?: RuleRow;
  /** What the backend is asked for after the alias default; undefined: nothing. */
  want?: 'on' | 'off';
  wantFrom: 'request' | 'alias' | 'nothing';
  /** The `x-reasoning-control` answer header. */
  applied?: string;
  clientBody: string;
  upstreamBody: string;
  edits: { key: string; value: string | null }[];
  /** The backend does not list the model (the resolver still answers). */
  unlisted: boolean;
  problem?: string;
}

export interface PickerBackend {
  name: string;
  state: string;
  models: string[];
}

const compiledCache = new WeakMap<
  readonly ReasoningRuleSpec[],
  { all: readonly ReasoningRule[]; compiled: CompiledRules }
>();

/** The configured rules and the built-ins as one compiled list, once per configuration. */
function rulesInForce(services: UiServices): { all: readonly ReasoningRule[]; compiled: CompiledRules } {
  const configured = services.config().reasoning_rules;
  let hit = compiledCache.get(configured);
  if (!hit) {
    const all = [...(configured as ReasoningRule[]), ...DEFAULT_REASONING_RULES];
    hit = { all, compiled: compileRules(all) };
    compiledCache.set(configured, hit);
  }
  return hit;
}

/** A short digest of the configured list: a change posted from a page showing another list is refused. */
export function fingerprint(rules: readonly ReasoningRuleSpec[]): string {
  return createHash('sha256').update(JSON.stringify(rules)).digest('hex').slice(0, 16);
}

export function paramsText(params: Record<string, unknown> | undefined): string {
  if (!params || Object.keys(params).length === 0) return '';
  return Object.entries(params)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(', ');
}

export function ruleRows(services: UiServices, applies?: ReasoningRule): RuleRow[] {
  const configured = services.config().reasoning_rules as ReasoningRule[];
  const row = (rule: ReasoningRule, place: number, isConfigured: boolean, index: number): RuleRow => ({
    place,
    configured: isConfigured,
    index,
    rule,
    enabled: rule.enabled !== false,
    paramsText: paramsText(rule.params),
    applies: rule === applies,
  });
  return [
    ...configured.map((r, i) => row(r, i, true, i)),
    ...DEFAULT_REASONING_RULES.map((r, i) => row(r, configured.length + i, false, i)),
  ];
}

/** The backends with chat models, for the resolver's pickers. */
export function pickerBackends(services: UiServices): PickerBackend[] {
  return services.registry
    .list()
    .filter((b) => !kindOf(b.spec).isMedia)
    .map((b) => ({
      name: b.name,
      state: !b.spec.enabled ? 'disabled' : b.draining ? 'draining' : b.healthy ? 'up' : 'down',
      models: b.models.map((m) => m.id),
    }));
}

/** The resolver's input from the query, a healthy backend and its first model when none is given. */
export function resolverInput(services: UiServices, query: Record<string, string | undefined>): ResolverInput {
  const sw = (SWITCHES as readonly string[]).includes(query.switch ?? '') ? (query.switch as SwitchChoice) : 'off';
  let backend = (query.backend ?? '').trim();
  let model = (query.model ?? '').trim();
  if (!backend) {
    const pick = pickerBackends(services)
      .sort((a, b) => Number(b.state === 'up') - Number(a.state === 'up'))
      .find((b) => b.models.length);
    backend = pick?.name ?? '';
    if (!model) model = pick?.models[0] ?? '';
  }
  return { backend, model, switch: sw, alias: (query.alias ?? '').trim() };
}

/** The aliases the resolver may apply (their reasoning default and sampling defaults). */
export function resolverAliases(services: UiServices): string[] {
  return Object.keys(services.config().virtual_models).filter((k) => !isAliasPattern(k));
}

export function resolve(services: UiServices, transforms: TransformFactory, input: ResolverInput): ResolverResult {
  const { all, compiled } = rulesInForce(services);
  const state = services.registry.get(input.backend);
  const body: Record<string, unknown> = {
    model: input.alias || input.model,
    messages: [{ role: 'user', content: 'Hello! In one sentence: why is the sky blue?' }],
    max_tokens: 256,
  };
  if (input.switch !== 'none') body.reasoning = input.switch;
  const rawBody = JSON.stringify(body);
  const result: ResolverResult = {
    wantFrom: 'nothing',
    clientBody: JSON.stringify(body, null, 2),
    upstreamBody: '',
    edits: [],
    unlisted: !!state && state.known && !state.modelsById.has(input.model),
  };
  if (!input.model) return { ...result, problem: 'Pick a model.' };
  if (!state)
    return { ...result, problem: input.backend ? `There is no backend named “${input.backend}”.` : 'Pick a backend.' };
  const rule = matchRule(compiled, input.model, input.backend);
  if (rule) {
    const place = all.indexOf(rule);
    const configured = place < services.config().reasoning_rules.length;
    result.rule = {
      place,
      configured,
      index: configured ? place : place - services.config().reasoning_rules.length,
      rule,
      enabled: true,
      paramsText: paramsText(rule.params),
      applies: true,
    };
  }
  const alias =
    input.alias && Object.hasOwn(services.config().alias_defaults, input.alias)
      ? services.config().alias_defaults[input.alias]
      : undefined;
  const request = switchRequest(body, 'chat');
  const want = withAliasDefault(request.want, request.saidAuto, alias?.reasoning);
  if (want) {
    result.want = want.value;
    result.wantFrom = request.want ? 'request' : 'alias';
  }
  const transform = transforms.forCall('chat', input.alias || undefined, request);
  const { edits, reasoning } = transform.edits(body, state.spec, input.model);
  result.applied = reasoning;
  const text = upstreamBody({ body, rawBody }, input.model, false, edits);
  result.upstreamBody = JSON.stringify(JSON.parse(text), null, 2);
  const shown = new Map<string, string | null>(edits);
  if (body.model !== input.model) shown.set('model', JSON.stringify(input.model));
  result.edits = [...shown].map(([key, value]) => ({ key, value }));
  return result;
}
