/**
 * The reasoning rule form: what the browser posts read into one rule of `reasoning_rules`, and
 * back. Only reading happens here (params that are no JSON object); whether the rule is valid
 * is config.yaml's validation (`ruleProblems`), whose paths (`reasoning_rules[2].params.token`)
 * are mapped back to the fields.
 */
import type { ConfigProblem } from '../../config/problems.ts';
import type { ReasoningRuleSpec } from '../../config/types.ts';
import { REASONING_MECHANISMS } from '../../bridges/reasoning/rules.ts';
import { isObject } from '../../json.ts';
import { one, type FormBody } from '../form-values.ts';
import { sentence, type FieldErrors } from './aliases-form.ts';

export type { FieldErrors, FormBody };

/** What each mechanism writes, and the params it reads (see bridges/reasoning/apply.ts). */
export const MECHANISM_INFO: Record<string, { what: string; params: [string, string][]; example?: string }> = {
  enable_thinking: {
    what:
      'Sets chat_template_kwargs.enable_thinking to true / false — vLLM, SGLang, llama.cpp with ' +
      '--jinja (Qwen3, GLM).',
    params: [['key', 'the kwarg name instead of enable_thinking (DeepSeek V3.1: "thinking")']],
    example: '{"key": "thinking"}',
  },
  reasoning_effort: {
    what: 'Sends reasoning_effort as a level — gpt-oss and OpenAI-style servers.',
    params: [
      ['off', 'the level for off (default "minimal")'],
      ['on', 'the level for on (default "high")'],
      ['efforts', 'the levels the model takes; others are clamped to them'],
      ['template_kwarg', 'true: also in chat_template_kwargs (older llama.cpp)'],
    ],
    example: '{"off": "low", "on": "high", "efforts": ["low", "medium", "high"]}',
  },
  nothink_token: {
    what: 'Appends a token to the last user message — Qwen3 on Ollama (/no_think).',
    params: [
      ['token', 'the off token (default "/nothink")'],
      ['on_token', "a token for on (default: none, on is the model's own default)"],
    ],
    example: '{"token": "/no_think", "on_token": "/think"}',
  },
  prefill: {
    what: 'Adds a closed <think></think> assistant turn for off — models without a switch.',
    params: [
      ['text', 'the prefill instead of "<think>\\n\\n</think>\\n\\n"'],
      ['continue_final_message', 'true for vLLM: continue the prefilled turn'],
    ],
    example: '{"continue_final_message": true}',
  },
  openrouter_reasoning: {
    what: "Sends OpenRouter's reasoning object ({enabled}, {effort}, {max_tokens}).",
    params: [
      ['off', 'the object for off (default {"enabled": false})'],
      ['on', 'the object for on (default {"enabled": true})'],
    ],
    example: '{"off": {"effort": "low"}}',
  },
  none: {
    what: 'The model has no switch: the body goes as it is, answered "x-reasoning-control: unsupported".',
    params: [],
  },
};

export const MECHANISMS = REASONING_MECHANISMS;

export interface RuleForm {
  /** Index in the configured list ('' for a new rule). */
  i: string;
  /** The list's fingerprint when the page was rendered. */
  v: string;
  /** New rules: where to insert (0-based). */
  position: string;
  model: string;
  backends: string[];
  backends_other: string;
  mechanism: string;
  params: string;
  enabled: boolean;
}

export function emptyRuleForm(v: string, count: number): RuleForm {
  return {
    i: '',
    v,
    position: String(count),
    model: '',
    backends: [],
    backends_other: '',
    mechanism: 'enable_thinking',
    params: '',
    enabled: true,
  };
}

/** The form of a rule (backends not in the fleet stay ticked, marked as such). */
export function ruleFormOf(rule: ReasoningRuleSpec, i: number, v: string): RuleForm {
  const backends = rule.backends ?? [];
  return {
    i: String(i),
    v,
    position: String(i),
    model: rule.model,
    backends: [...backends],
    backends_other: '',
    mechanism: rule.mechanism,
    params: rule.params && Object.keys(rule.params).length ? JSON.stringify(rule.params, null, 2) : '',
    enabled: rule.enabled !== false,
  };
}

export function readRuleForm(raw: FormBody): { form: RuleForm; rule?: ReasoningRuleSpec; errors: FieldErrors } {
  const picked = raw?.backends;
  const form: RuleForm = {
    i: one(raw, 'i').trim(),
    v: one(raw, 'v'),
    position: one(raw, 'position').trim(),
    model: one(raw, 'model').trim(),
    backends: (Array.isArray(picked) ? picked : [picked])
      .filter((b): b is string => typeof b === 'string' && b.trim() !== '')
      .map((b) => b.trim()),
    backends_other: one(raw, 'backends_other').trim(),
    mechanism: one(raw, 'mechanism'),
    params: one(raw, 'params').replace(/\r\n/g, '\n').trim(),
    enabled: ['on', 'true', '1'].includes(one(raw, 'enabled')),
  };
  const errors: FieldErrors = {};
  let params: Record<string, unknown> | undefined;
  if (form.params) {
    try {
      const parsed: unknown = JSON.parse(form.params);
      if (isObject(parsed)) params = parsed;
      else errors.params = 'A JSON object, like {"token": "/no_think"}; blank for none.';
    } catch (err) {
      errors.params = `Not valid JSON: ${(err as Error).message}.`;
    }
  }
  if (Object.keys(errors).length) return { form, errors };
  const backends = [...new Set([...form.backends, ...form.backends_other.split(/[\s,]+/).filter(Boolean)])];
  const rule = { model: form.model, mechanism: form.mechanism } as ReasoningRuleSpec;
  if (backends.length) rule.backends = backends;
  if (params && Object.keys(params).length) rule.params = params;
  if (!form.enabled) rule.enabled = false;
  return { form, rule, errors };
}

/** Config problems of the rule at `index` as fields; problems elsewhere in the list as the form's. */
export function ruleErrorsOf(problems: readonly ConfigProblem[], index: number): FieldErrors {
  const base = `reasoning_rules[${index}]`;
  const errors: FieldErrors = {};
  for (const p of problems) {
    let field = '_form';
    for (const key of ['model', 'backends', 'mechanism', 'params', 'enabled']) {
      const at = `${base}.${key}`;
      if (p.path === at || p.path.startsWith(`${at}.`) || p.path.startsWith(`${at}[`)) field = key;
    }
    const sub = field === 'params' && p.path !== `${base}.params` ? `“${p.path.slice(base.length + 8)}” ` : '';
    const message = field === '_form' ? `${p.path}: ${p.message}` : sentence(`${sub}${p.message}`);
    errors[field] = errors[field] ? `${errors[field]} ${message}` : message;
  }
  return errors;
}
