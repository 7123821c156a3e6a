/**
 * What the Statistics tab shows: the range asked for (a preset or custom UTC days), then the
 * call log's summary of it turned into cards, tables with bars, the prompt-cache split and the
 * chart series. Plain data for views/stats.eta and public/stats.js. Pure.
 */
import type { CallSummary, GroupStats, RollupStep } from '../stats/call-log.ts';
import { DAY_MS } from '../stats/period.ts';
import { parseUtcTime } from './calls-query.ts';

const HOUR_MS = 3_600_000;
export const PRESETS = [
  { id: '24h', label: '24 h', title: 'Last 24 hours' },
  { id: '7d', label: '7 d', title: 'Last 7 days' },
  { id: '30d', label: '30 d', title: 'Last 30 days' },
] as const;
export type RangeId = (typeof PRESETS)[number]['id'] | 'custom';
/** The longest custom range, in days. */
export const MAX_CUSTOM_DAYS = 400;
/** Rows listed per group; the rest are summed into one "others" row. */
export const GROUP_ROWS = 15;

export interface StatsInput {
  range: string;
  since: string;
  until: string;
}

export interface StatsRange {
  id: RangeId;
  since: number;
  until: number;
  step: RollupStep;
}

export function parseStatsQuery(
  query: unknown,
  now: number,
): { input: StatsInput; range: StatsRange; errors: Record<string, string> } {
  const raw = (query && typeof query === 'object' ? query : {}) as Record<string, unknown>;
  const str = (k: string) => (typeof raw[k] === 'string' ? (raw[k] as string).trim() : '');
  const input: StatsInput = { range: str('range') || '7d', since: str('since'), until: str('until') };
  const errors: Record<string, string> = {};
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const preset = (id: RangeId): StatsRange => {
    if (id === '24h') {
      const hour = Math.floor(now / HOUR_MS) * HOUR_MS;
      return { id, since: hour - 23 * HOUR_MS, until: hour + HOUR_MS, step: 'hour' };
    }
    const days = id === '30d' ? 30 : 7;
    return { id, since: today - (days - 1) * DAY_MS, until: today + DAY_MS, step: 'day' };
  };
  if (input.range !== 'custom') {
    if (!PRESETS.some((p) => p.id === input.range)) errors.range = 'Pick 24 h, 7 d, 30 d or a custom range.';
    return { input, range: preset(errors.range ? '7d' : (input.range as RangeId)), errors };
  }
  const day = (s: string, field: 'since' | 'until', blank: number | undefined): number | undefined => {
    if (!s) {
      if (blank === undefined) errors[field] = 'Enter the first day of the range.';
      return blank;
    }
    const t = /^\d{4}-\d{2}-\d{2}$/.test(s) ? parseUtcTime(s) : undefined;
    if (t === undefined) errors[field] = 'A date like 2026-03-15.';
    return t;
  };
  const since = day(input.since, 'since', undefined);
  const lastDay = day(input.until, 'until', today);
  if (since !== undefined && lastDay !== undefined && !errors.since && !errors.until) {
    if (since > lastDay) errors.until = 'Must not be before "From".';
    else if ((lastDay - since) / DAY_MS + 1 > MAX_CUSTOM_DAYS)
      errors.until = `At most ${MAX_CUSTOM_DAYS} days at a time.`;
  }
  if (Object.keys(errors).length || since === undefined || lastDay === undefined)
    return { input, range: preset('7d'), errors };
  return { input, range: { id: 'custom', since, until: lastDay + DAY_MS, step: 'day' }, errors };
}

/** A share of a whole, as the template draws and prints it. */
export interface Part {
  id: 'cached' | 'written' | 'fresh' | 'unreported';
  label: string;
  tokens: number;
  /** 0..100, one decimal. */
  pct: number;
  /** Where the segment starts in a 0..100 bar. */
  x: number;
}

export interface GroupLine extends GroupStats {
  /** This row's calls against the group's largest, 0..100 (the bar). */
  bar: number;
  /** Share of all calls of the range, 0..100. */
  share: number;
  cache: Part[];
}

export interface GroupTable {
  id: 'backend' | 'model' | 'source';
  title: string;
  rows: GroupLine[];
  /** The rows past `GROUP_ROWS`, summed (no percentiles: they do not add up). */
  others: {
    count: number;
    calls: number;
    errors: number;
    prompt_tokens: number;
    completion_tokens: number;
    cost_usd: number;
  } | null;
}

export interface StatsView {
  total: GroupStats;
  errorRate: number;
  cache: { parts: Part[]; hitRate: number | null; silentBackends: string[] };
  groups: GroupTable[];
  /** Periods with calls, newest first (the table under the charts). */
  periods: GroupStats[];
  chart: ChartData;
  empty: boolean;
}

export interface ChartData {
  step: RollupStep;
  /** Period starts, unix seconds (uPlot's unit). */
  t: number[];
  calls: number[];
  errors: number[];
  prompt: number[];
  completion: number[];
  cost: number[];
  p50: (number | null)[];
  p95: (number | null)[];
  ttft50: (number | null)[];
  ttft95: (number | null)[];
  /** Cache hit rate, percent; null where no backend that reports cache had prompt tokens. */
  hit: (number | null)[];
}

export function cacheParts(g: GroupStats): Part[] {
  const fresh = Math.max(0, g.reporting_prompt_tokens - g.cached_tokens - g.cache_write_tokens);
  const whole = g.prompt_tokens;
  const raw: Omit<Part, 'pct' | 'x'>[] = [
    { id: 'cached', label: 'cached', tokens: g.cached_tokens },
    { id: 'written', label: 'written', tokens: g.cache_write_tokens },
    { id: 'fresh', label: 'fresh', tokens: fresh },
    { id: 'unreported', label: 'no cache reporting', tokens: g.unreported_prompt_tokens },
  ];
  let x = 0;
  return raw.map((p) => {
    const pct = whole > 0 ? (p.tokens / whole) * 100 : 0;
    const part = { ...p, pct: Math.round(pct * 10) / 10, x: Math.round(x * 100) / 100 };
    x += pct;
    return part;
  });
}

export function statsView(s: CallSummary): StatsView {
  const total = s.total;
  const table = (id: GroupTable['id'], title: string, rows: GroupStats[]): GroupTable => {
    const top = rows.slice(0, GROUP_ROWS);
    const rest = rows.slice(GROUP_ROWS);
    const max = Math.max(1, ...top.map((r) => r.calls));
    return {
      id,
      title,
      rows: top.map((r) => ({
        ...r,
        bar: round1((r.calls / max) * 100),
        share: total.calls ? round1((r.calls / total.calls) * 100) : 0,
        cache: cacheParts(r),
      })),
      others:
        rest.length === 0
          ? null
          : rest.reduce(
              (o, r) => ({
                count: o.count + 1,
                calls: o.calls + r.calls,
                errors: o.errors + r.errors,
                prompt_tokens: o.prompt_tokens + r.prompt_tokens,
                completion_tokens: o.completion_tokens + r.completion_tokens,
                cost_usd: o.cost_usd + r.cost_usd,
              }),
              { count: 0, calls: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, cost_usd: 0 },
            ),
    };
  };
  const series = s.series;
  return {
    total,
    errorRate: total.calls ? round1((total.errors / total.calls) * 100) : 0,
    cache: { parts: cacheParts(total), hitRate: total.cache_hit_share, silentBackends: s.silentBackends },
    groups: [
      table('backend', 'Per backend', s.backend),
      table('model', 'Per model', s.model),
      table('source', 'Per source', s.source),
    ],
    periods: series.filter((p) => p.calls > 0).reverse(),
    chart: {
      step: s.step,
      t: series.map((p) => p.t / 1000),
      calls: series.map((p) => p.calls),
      errors: series.map((p) => p.errors),
      prompt: series.map((p) => p.prompt_tokens),
      completion: series.map((p) => p.completion_tokens),
      cost: series.map((p) => Math.round(p.cost_usd * 1e6) / 1e6),
      p50: series.map((p) => p.p50_ms),
      p95: series.map((p) => p.p95_ms),
      ttft50: series.map((p) => p.ttft_p50_ms),
      ttft95: series.map((p) => p.ttft_p95_ms),
      hit: series.map((p) => (p.cache_hit_share === null ? null : round1(p.cache_hit_share * 100))),
    },
    empty: total.calls === 0,
  };
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}
