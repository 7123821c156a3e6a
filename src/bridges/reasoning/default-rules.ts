/**
 * The rules the gateway ships, tried after the configured and stored ones. Model ids are the
 * only thing they can look at (backend names are the operator's), so each rule keys on how the
 * model is usually named: Hugging Face ids on vLLM / llama.cpp (`Qwen/Qwen3-8B`), Ollama tags
 * (`qwen3:8b`), OpenRouter's vendor slugs (`anthropic/claude-sonnet-4.5`). Specific rules come
 * before the general ones they carve out of. An operator who knows better writes a rule with
 * `backends:`; it comes first.
 */
import type { ReasoningRule } from '../../config/reasoning-types.ts';

const RULES: ReasoningRule[] = [
  // DeepSeek-R1 and its distills (also `DeepSeek-R1-0528-Qwen3-8B`, hence before Qwen3) always
  // think. The known trick, a prefilled empty `<think></think>`, is not safe as a default: the
  // R1 templates open `<think>` themselves and cut assistant turns at `</think>`, and llama.cpp
  // refuses an assistant prefill while thinking is on (HTTP 400). Opt in with a `prefill` rule.
  { model: '*deepseek-r1*', mechanism: 'none' },
  // QwQ's template always opens a think block; it has no switch.
  { model: '*qwq*', mechanism: 'none' },
  // Qwen3 split into single-mode models: Instruct-2507 never thinks and Thinking-2507 always
  // does (their templates dropped enable_thinking), likewise Qwen3-VL / Qwen3-Next
  // Instruct|Thinking and Qwen3-Coder.
  { model: '*qwen3*instruct*', mechanism: 'none' },
  { model: '*qwen3*thinking*', mechanism: 'none' },
  { model: '*qwen3-coder*', mechanism: 'none' },
  // An Ollama tag (`qwen3:8b`): Ollama's OpenAI endpoint does not pass chat_template_kwargs to
  // the template, but Qwen3 obeys its documented soft switch in the latest user turn.
  { model: '*qwen3*:*', mechanism: 'nothink_token', params: { token: '/no_think', on_token: '/think' } },
  // Hybrid Qwen3 (and 3.5+) on vLLM / llama.cpp --jinja / SGLang: the template's hard switch.
  { model: '*qwen3*', mechanism: 'enable_thinking' },
  // OpenRouter's DeepSeek V3.1 slug: OpenRouter drives the template itself from `reasoning`.
  { model: 'deepseek/deepseek-chat-v3.1*', mechanism: 'openrouter_reasoning' },
  // DeepSeek V3.1 (and Terminus) is hybrid; its template's kwarg is `thinking`, off by default.
  { model: '*deepseek-v3.1*', mechanism: 'enable_thinking', params: { key: 'thinking' } },
  // gpt-oss only knows low / medium / high and cannot stop reasoning: "off" is its lowest level.
  // llama.cpp builds before native reasoning_effort read the level from chat_template_kwargs only.
  {
    model: '*gpt-oss*',
    mechanism: 'reasoning_effort',
    params: { off: 'low', on: 'high', efforts: ['low', 'medium', 'high'], template_kwarg: true },
  },
  // GLM on OpenRouter (`z-ai/…`): the kwargs would not reach the template there.
  { model: 'z-ai/glm-*', mechanism: 'openrouter_reasoning' },
  // GLM-4.5 / 4.6 / 4.7 (incl. -Air, -Flash) are hybrid; their templates read enable_thinking.
  { model: '*glm-4.5*', mechanism: 'enable_thinking' },
  { model: '*glm-4.6*', mechanism: 'enable_thinking' },
  { model: '*glm-4.7*', mechanism: 'enable_thinking' },
  // Claude through OpenRouter: thinking is off unless asked; a budget becomes max_tokens.
  { model: 'anthropic/*', mechanism: 'openrouter_reasoning' },
  // Gemini 2.5 Pro (and 3) cannot stop thinking: "off" asks for the least of it.
  { model: 'google/gemini-2.5-pro*', mechanism: 'openrouter_reasoning', params: { off: { effort: 'low' } } },
  { model: 'google/gemini-3*', mechanism: 'openrouter_reasoning', params: { off: { effort: 'low' } } },
  // Gemini 2.5 Flash / Flash-Lite can switch thinking off.
  { model: 'google/gemini-2.5*', mechanism: 'openrouter_reasoning' },
  // GPT-5.1 and later accept effort "none" (no reasoning at all).
  { model: 'openai/gpt-5.*', mechanism: 'openrouter_reasoning', params: { off: { effort: 'none' } } },
  // GPT-5 (-mini, -nano, -codex) cannot go below "minimal".
  { model: 'openai/gpt-5*', mechanism: 'openrouter_reasoning', params: { off: { effort: 'minimal' } } },
  // o-series models always reason and reject "minimal": "off" is "low".
  { model: 'openai/o*', mechanism: 'openrouter_reasoning', params: { off: { effort: 'low' } } },
];

/** Frozen all the way down: the list is shared by every compiled configuration. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

export const DEFAULT_REASONING_RULES: readonly ReasoningRule[] = deepFreeze(RULES);
