/**
 * The reasoning a Messages request asks for, read from `thinking` and `output_config.effort`.
 *
 * Precedence, where the two disagree: an explicit `{type:"disabled"}` is off whatever the
 * effort says (the client said no thinking); `{type:"enabled", budget_tokens}` keeps its
 * budget (a number is more precise than a level); otherwise an effort wins over
 * `{type:"adaptive"}`, because adaptive only says "let the model decide" and the effort is how
 * the client (Claude Code's effort setting) tells it how much.
 */
import { invalid, isObject, type Json, type ReasoningIntent } from './types.ts';

export function reasoningIntent(body: Json): ReasoningIntent | undefined {
  const thinking = readThinking(body.thinking);
  const effort = readEffort(body.output_config);
  if (thinking?.mode === 'off') return thinking;
  if (thinking?.mode === 'on' && thinking.budgetTokens !== undefined) return thinking;
  if (effort !== undefined) return { mode: 'effort', effort };
  return thinking;
}

function readThinking(thinking: unknown): ReasoningIntent | undefined {
  if (thinking === undefined || thinking === null) return undefined;
  if (!isObject(thinking)) throw invalid('thinking', 'must be an object');
  switch (thinking.type) {
    case 'disabled':
      return { mode: 'off' };
    case 'adaptive':
      return { mode: 'on' };
    case 'enabled': {
      const budget = thinking.budget_tokens;
      if (budget === undefined || budget === null) return { mode: 'on' };
      if (!Number.isInteger(budget) || (budget as number) < 1)
        throw invalid('thinking.budget_tokens', 'must be a positive integer');
      return { mode: 'on', budgetTokens: budget as number };
    }
    default:
      throw invalid(
        'thinking.type',
        `must be one of "enabled", "adaptive", "disabled" (got ${JSON.stringify(thinking.type)})`,
      );
  }
}

function readEffort(config: unknown): string | undefined {
  if (config === undefined || config === null) return undefined;
  if (!isObject(config)) throw invalid('output_config', 'must be an object');
  const effort = config.effort;
  if (effort === undefined || effort === null) return undefined;
  if (typeof effort !== 'string' || effort === '') throw invalid('output_config.effort', 'must be a non-empty string');
  return effort;
}
