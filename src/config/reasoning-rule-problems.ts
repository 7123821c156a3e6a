/**
 * Validation of a reasoning rule list as the config loader and the admin API receive it
 * (parsed YAML / JSON, not yet trusted). Every problem is reported at once with its key path
 * (`reasoning_rules[1].params.token`), so a user fixes the file in one go.
 */
import { isObject } from '../json.ts';
import { describeValue, keyPath, type KeyPathProblem } from './key-path.ts';
import { REASONING_MECHANISMS, type ReasoningMechanism } from './reasoning-types.ts';

const RULE_KEYS = new Set(['model', 'backends', 'mechanism', 'params', 'enabled']);

type ParamCheck = (value: unknown) => string | undefined;

const nonEmptyString: ParamCheck = (v) =>
  typeof v === 'string' && v.trim() !== '' ? undefined : `must be a non-empty string, got ${describeValue(v)}`;
const anyString: ParamCheck = (v) => (typeof v === 'string' ? undefined : `must be a string, got ${describeValue(v)}`);
const boolean: ParamCheck = (v) =>
  typeof v === 'boolean' ? undefined : `must be true or false, got ${describeValue(v)}`;
const mapping: ParamCheck = (v) =>
  isObject(v) ? undefined : `must be a mapping (the reasoning object sent to OpenRouter), got ${describeValue(v)}`;
const stringList: ParamCheck = (v) =>
  Array.isArray(v) && v.length > 0 && v.every((s) => typeof s === 'string' && s.trim() !== '')
    ? undefined
    : `must be a non-empty list of strings, got ${describeValue(v)}`;

/** The params each mechanism reads (see apply.ts); anything else is a typo. */
const PARAMS: Record<ReasoningMechanism, Record<string, ParamCheck>> = {
  enable_thinking: { key: nonEmptyString },
  reasoning_effort: { off: nonEmptyString, on: nonEmptyString, efforts: stringList, template_kwarg: boolean },
  nothink_token: { token: nonEmptyString, on_token: nonEmptyString },
  // the prefill text may be anything the model should see, even whitespace; not empty, though
  prefill: {
    text: (v) => anyString(v) ?? (v === '' ? 'must not be empty' : undefined),
    continue_final_message: boolean,
  },
  openrouter_reasoning: { off: mapping, on: mapping },
  none: {},
};

function isMechanism(value: unknown): value is ReasoningMechanism {
  return typeof value === 'string' && (REASONING_MECHANISMS as readonly string[]).includes(value);
}

function oneRuleProblems(raw: unknown, path: string): KeyPathProblem[] {
  if (!isObject(raw))
    return [{ path, message: `must be a mapping with model and mechanism, got ${describeValue(raw)}` }];
  const problems: KeyPathProblem[] = [];
  for (const key of Object.keys(raw)) {
    if (!RULE_KEYS.has(key))
      problems.push({ path: keyPath(path, key), message: `unknown key (a rule has ${[...RULE_KEYS].join(', ')})` });
  }

  if (raw.model === undefined)
    problems.push({
      path: keyPath(path, 'model'),
      message: 'is required (a glob over the backend\'s model id, e.g. "*qwen3*")',
    });
  else if (typeof raw.model !== 'string' || raw.model.trim() === '')
    problems.push({
      path: keyPath(path, 'model'),
      message: `must be a non-empty glob string, got ${describeValue(raw.model)}`,
    });

  if (raw.backends !== undefined) {
    if (!Array.isArray(raw.backends)) {
      problems.push({
        path: keyPath(path, 'backends'),
        message: `must be a list of backend names (leave it out for all), got ${describeValue(raw.backends)}`,
      });
    } else {
      raw.backends.forEach((b, i) => {
        if (typeof b !== 'string' || b.trim() === '')
          problems.push({
            path: keyPath(keyPath(path, 'backends'), i),
            message: `must be a backend name, got ${describeValue(b)}`,
          });
      });
    }
  }

  if (raw.enabled !== undefined && typeof raw.enabled !== 'boolean') {
    problems.push({
      path: keyPath(path, 'enabled'),
      message: `must be true or false, got ${describeValue(raw.enabled)}`,
    });
  }

  const mechanism = raw.mechanism;
  if (mechanism === undefined) {
    problems.push({
      path: keyPath(path, 'mechanism'),
      message: `is required (one of ${REASONING_MECHANISMS.join(', ')})`,
    });
  } else if (!isMechanism(mechanism)) {
    problems.push({
      path: keyPath(path, 'mechanism'),
      message: `must be one of ${REASONING_MECHANISMS.join(', ')}, got ${describeValue(mechanism)}`,
    });
  }

  if (raw.params !== undefined) {
    const paramsPath = keyPath(path, 'params');
    if (!isObject(raw.params)) {
      problems.push({ path: paramsPath, message: `must be a mapping, got ${describeValue(raw.params)}` });
    } else if (isMechanism(mechanism)) {
      const known = PARAMS[mechanism];
      for (const [key, value] of Object.entries(raw.params)) {
        const check = known[key];
        if (!check) {
          const names = Object.keys(known);
          const hint = names.length ? `${mechanism} reads ${names.join(', ')}` : `${mechanism} takes no params`;
          problems.push({ path: keyPath(paramsPath, key), message: `unknown param (${hint})` });
          continue;
        }
        const message = check(value);
        if (message) problems.push({ path: keyPath(paramsPath, key), message });
      }
      const efforts = raw.params.efforts;
      if (mechanism === 'reasoning_effort' && Array.isArray(efforts) && stringList(efforts) === undefined) {
        for (const key of ['off', 'on'] as const) {
          const level = raw.params[key];
          if (typeof level === 'string' && !efforts.includes(level)) {
            problems.push({
              path: keyPath(paramsPath, key),
              message: `"${level}" is not in efforts (${efforts.join(', ')})`,
            });
          }
        }
      }
    }
  }
  return problems;
}

/** Problems of a rule list at `path` (empty = valid). */
export function ruleProblems(raw: unknown, path: string): KeyPathProblem[] {
  if (!Array.isArray(raw)) return [{ path, message: `must be a list of rules, got ${describeValue(raw)}` }];
  return raw.flatMap((rule, i) => oneRuleProblems(rule, keyPath(path, i)));
}
