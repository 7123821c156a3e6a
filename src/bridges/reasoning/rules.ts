/**
 * The reasoning rule list: which mechanism switches a backend's model. Rules come from the
 * config, then the store, then `DEFAULT_REASONING_RULES`; the first enabled rule whose glob
 * matches the backend's model id (and whose `backends`, if any, name the serving backend) wins.
 * The match is redone on every failover attempt: the same alias can land on a llama.cpp and an
 * OpenRouter backend, which need different spellings.
 */
import { globMatcher } from '../../config/name-patterns.ts';
import type { ReasoningRule } from '../../config/reasoning-types.ts';

export { REASONING_MECHANISMS, type ReasoningMechanism, type ReasoningRule } from '../../config/reasoning-types.ts';
export { DEFAULT_REASONING_RULES } from './default-rules.ts';
export { ruleProblems } from '../../config/reasoning-rule-problems.ts';

interface CompiledRule {
  readonly rule: ReasoningRule;
  readonly matcher: RegExp;
  /** Undefined = every backend. */
  readonly backends?: ReadonlySet<string>;
}

/** Rules with their globs compiled (once per config, not per call). */
export interface CompiledRules {
  readonly rules: readonly CompiledRule[];
}

/** Model ids differ in case between servers (`Qwen/Qwen3-8B`, `qwen3:8b`): globs ignore it. */
function caseInsensitiveGlob(glob: string): RegExp {
  const exact = globMatcher(glob);
  return new RegExp(exact.source, 'is');
}

export function compileRules(rules: readonly ReasoningRule[]): CompiledRules {
  return {
    rules: rules.map((rule) => ({
      rule,
      matcher: caseInsensitiveGlob(rule.model),
      ...(rule.backends ? { backends: new Set(rule.backends) } : {}),
    })),
  };
}

/** The first enabled rule for `model` served by `backend`, if any (undefined = unsupported). */
export function matchRule(rules: CompiledRules, model: string, backend: string): ReasoningRule | undefined {
  for (const c of rules.rules) {
    if (c.rule.enabled === false) continue;
    if (c.backends && !c.backends.has(backend)) continue;
    if (c.matcher.test(model)) return c.rule;
  }
  return undefined;
}
