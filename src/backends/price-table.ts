/**
 * The built-in prices of Anthropic's and OpenAI's own APIs, whose `/v1/models` publishes none.
 * USD per million tokens. Used only for paid backends of kind openai / anthropic, for a model
 * that neither the backend's `pricing:` nor discovery prices (see pricing.ts). Pure data.
 *
 * Prices as of 2026-12-02. Sources:
 * - Anthropic: https://platform.claude.com/docs/en/about-claude/pricing ("Model pricing") and
 *   each model's overview page (platform.claude.com/docs/en/models/…). `cache_write` is the
 *   5-minute write (1.25 × input), the default TTL; 1-hour writes (2 × input) are billed at it
 *   too, since usage reports both in one count. Long-context surcharges are not modelled.
 *   Claude Sonnet 5.5's cache read is the $0.10 that applies since 2026-10-07.
 *   Left out: Haiku 5.5 (its price depends on the prompt's length), Fable / Mythos (limited
 *   availability): set `pricing:` on the backend for them.
 * - OpenAI: https://developers.openai.com/api/docs/pricing (Standard tier, text tokens;
 *   embeddings from the same page and each model's page on developers.openai.com).
 *   OpenAI bills no cache writes; `cache_read` is the "cached input" price.
 *
 * Patterns follow the same rule as `pricing:` in config.yaml: the exact id, else the longest
 * matching glob (`*` any run, `?` one character). OpenAI entries are an id plus its dated
 * snapshots (`gpt-4o-2024-08-06`), so that `gpt-4o-audio-preview` and friends, priced
 * differently, stay unpriced rather than priced wrong.
 */
import type { ModelPricing } from './types.ts';

export const BUILT_IN_PRICES_AS_OF = '2026-12-02';

/** `cacheRead` absent: the model has no prompt cache (nothing is billed at a cache price). */
type Row = readonly [input: number, output: number, cacheRead?: number, cacheWrite?: number];

const price = ([input, output, cache_read, cache_write]: Row): ModelPricing => {
  const pricing: ModelPricing = { input, output };
  if (cache_read !== undefined) pricing.cache_read = cache_read;
  if (cache_write !== undefined) pricing.cache_write = cache_write;
  return pricing;
};

// ── Anthropic: [input, output, cache read, 5-minute cache write]
const OPUS_4_0: Row = [15, 75, 1.5, 18.75];
const OPUS_4_5: Row = [5, 25, 0.5, 6.25];
const ANTHROPIC: readonly (readonly [string, Row])[] = [
  ['claude-opus-4-0*', OPUS_4_0],
  ['claude-opus-4-2025*', OPUS_4_0], // claude-opus-4-20250514
  ['claude-opus-4-1*', OPUS_4_0],
  ['claude-opus-4-5*', OPUS_4_5],
  ['claude-opus-4-6*', OPUS_4_5],
  ['claude-opus-4-7*', OPUS_4_5],
  ['claude-opus-4-8*', OPUS_4_5],
  ['claude-opus-5*', OPUS_4_5],
  ['claude-opus-5-5*', [4, 20, 0.2, 5]],
  ['claude-sonnet-4*', [3, 15, 0.3, 3.75]], // 4, 4.5 and 4.6
  ['claude-sonnet-5*', [2, 10, 0.2, 2.5]],
  ['claude-sonnet-5-5*', [2, 10, 0.1, 2.5]],
  ['claude-haiku-4-5*', [1, 5, 0.1, 1.25]],
  ['claude-3-5-haiku*', [0.8, 4, 0.08, 1]],
  ['claude-3-haiku*', [0.25, 1.25, 0.03, 0.3]],
];

// ── OpenAI: [input, output, cached input]
const OPENAI: readonly (readonly [string, Row])[] = [
  ['gpt-5.5', [5, 30, 0.5]],
  ['gpt-5.4', [2.5, 15, 0.25]],
  ['gpt-5.4-mini', [0.75, 4.5, 0.075]],
  ['gpt-5.4-nano', [0.2, 1.25, 0.02]],
  ['gpt-5.2', [1.75, 14, 0.175]],
  ['gpt-5.1', [1.25, 10, 0.125]],
  ['gpt-5', [1.25, 10, 0.125]],
  ['gpt-5-chat-latest', [1.25, 10, 0.125]],
  ['gpt-5-mini', [0.25, 2, 0.025]],
  ['gpt-5-nano', [0.05, 0.4, 0.005]],
  ['gpt-4.1', [2, 8, 0.5]],
  ['gpt-4.1-mini', [0.4, 1.6, 0.1]],
  ['gpt-4.1-nano', [0.1, 0.4, 0.025]],
  ['gpt-4o', [2.5, 10, 1.25]],
  ['gpt-4o-mini', [0.15, 0.6, 0.075]],
  ['o1', [15, 60, 7.5]],
  ['o3', [2, 8, 0.5]],
  ['o3-mini', [1.1, 4.4, 0.55]],
  ['o4-mini', [1.1, 4.4, 0.275]],
];

/** An OpenAI id and its dated snapshots (`-YYYY-MM-DD`). */
const withSnapshots = ([id, row]: readonly [string, Row]): [string, ModelPricing][] => [
  [id, price(row)],
  [`${id}-20??-??-??`, price(row)],
];

// ── OpenAI embeddings: input only (no output tokens, no cache), no dated snapshots
const OPENAI_EMBEDDINGS: readonly (readonly [string, Row])[] = [
  ['text-embedding-3-small', [0.02, 0]],
  ['text-embedding-3-large', [0.13, 0]],
  ['text-embedding-ada-002', [0.1, 0]],
];

/** Dated snapshots priced unlike their id (an exact id beats the id's snapshot pattern). */
const OPENAI_SNAPSHOTS: readonly (readonly [string, Row])[] = [
  ['gpt-4o-2024-05-13', [5, 15]], // the first gpt-4o: dearer, and no cached-input price
];

/** Pattern → price, in table order (equal-length patterns: the first wins). */
export const BUILT_IN_PRICES: readonly (readonly [string, ModelPricing])[] = Object.freeze([
  ...ANTHROPIC.map(([pattern, row]) => [pattern, price(row)] as const),
  ...OPENAI_SNAPSHOTS.map(([id, row]) => [id, price(row)] as const),
  ...OPENAI.flatMap(withSnapshots),
  ...OPENAI_EMBEDDINGS.map(([id, row]) => [id, price(row)] as const),
]);
