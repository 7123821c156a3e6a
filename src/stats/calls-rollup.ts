/**
 * The statistics rollup: the calls on disk summed per period (UTC hour for the last
 * `HOUR_TIER_DAYS`, UTC day for all) × backend × model × source, with duration and ttft
 * histograms, kept in memory. The console's Statistics tab reads it, so a 30-day view of
 * 100,000 calls adds up a few thousand cells in ~4 ms instead of scanning every row (measured
 * at 100,000 rows: one GROUP BY over 30 days ~25 ms, `aggregate()`'s percentile window ~180 ms
 * per group; scripts/bench-ui-calls.ts times the pages).
 *
 * The call log builds it once from stats.db (in slices, off the request path) and adds each
 * row it writes; pruning drops whole days. Totals are exact; percentiles are nearest-rank over
 * histograms exact below 128 ms and 2 % wide above (the value shown is the bucket's middle,
 * within 1 %). Pure apart from the clock.
 */
import {
  addCall,
  addTotals,
  cacheHitShare,
  emptyTotals,
  nearestRank,
  reportsCache,
  type AggregateRow,
  type CallTotals,
  type SummedCall,
} from '../store/call-aggregates.ts';
import { DAY_MS } from './period.ts';

export const HOUR_MS = 3_600_000;
/** Days the hourly tier keeps (the 24 h view needs one; a week of hours costs little). */
export const HOUR_TIER_DAYS = 8;

export type RollupStep = 'hour' | 'day';

/** Periods a summary lists at most before it starts at the first one with calls. */
const MAX_PERIODS = 1_000;

/**
 * Sums of one group (a backend, model, source or period) over a range: the sums and the cache
 * hit share of `aggregate()` (store/call-aggregates.ts), with the cache split and ttft beside
 * them; percentiles null where there are no calls (an empty period).
 */
export interface GroupStats extends Omit<AggregateRow, 'p50_ms' | 'p95_ms'> {
  /** Prompt tokens of calls whose backend reports cache use: the whole of which cached + written + fresh is. */
  reporting_prompt_tokens: number;
  /** Prompt tokens of calls to backends that never reported a cache read or write ("no cache reporting"). */
  unreported_prompt_tokens: number;
  p50_ms: number | null;
  p95_ms: number | null;
  ttft_p50_ms: number | null;
  ttft_p95_ms: number | null;
}

export interface SeriesPoint extends GroupStats {
  /** Start of the period, unix ms. */
  t: number;
}

export interface CallSummary {
  /** The range covered, aligned to `step`: [since, until). */
  since: number;
  until: number;
  step: RollupStep;
  total: GroupStats;
  backend: GroupStats[];
  model: GroupStats[];
  source: GroupStats[];
  /** Every period of the range, empty ones included, oldest first. */
  series: SeriesPoint[];
  /** Backends seen in the range whose calls never reported a cache read or write. */
  silentBackends: string[];
}

// ───────────────────────── histograms

const EXACT_BELOW = 128;
const RATIO = 1.02;
const LN_RATIO = Math.log(RATIO);

export function bucketOf(ms: number): number {
  return ms < EXACT_BELOW
    ? Math.max(0, Math.floor(ms))
    : EXACT_BELOW + Math.floor(Math.log(ms / EXACT_BELOW) / LN_RATIO);
}

/** The value a bucket stands for: itself below 128 ms, else its geometric middle. */
export function bucketValue(b: number): number {
  return b < EXACT_BELOW ? b : Math.round(EXACT_BELOW * RATIO ** (b - EXACT_BELOW + 0.5));
}

/** A sparse histogram: sorted buckets and their weights (a cell holds few distinct values). */
class Hist {
  readonly buckets: number[] = [];
  readonly weights: number[] = [];

  add(ms: number, weight: number): void {
    const b = bucketOf(ms);
    const { buckets } = this;
    let lo = 0;
    let hi = buckets.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (buckets[mid] < b) lo = mid + 1;
      else hi = mid;
    }
    if (buckets[lo] === b) this.weights[lo] += weight;
    else {
      buckets.splice(lo, 0, b);
      this.weights.splice(lo, 0, weight);
    }
  }
}

/**
 * Weights per bucket summed over cells (a dense array: this runs per cell and group), read as
 * nearest-rank percentiles.
 */
class Merged {
  private w = new Float64Array(256);
  private n = 0;
  private top = -1;

  add(h: Hist): void {
    const { buckets, weights } = h;
    const last = buckets.length - 1;
    if (last < 0) return;
    if (buckets[last] >= this.w.length) {
      const grown = new Float64Array(Math.max(this.w.length * 2, buckets[last] + 1));
      grown.set(this.w);
      this.w = grown;
    }
    const w = this.w;
    for (let i = 0; i <= last; i++) {
      w[buckets[i]] += weights[i];
      this.n += weights[i];
    }
    if (buckets[last] > this.top) this.top = buckets[last];
  }

  /** Nearest rank, as `aggregate()`. */
  percentiles(ps: readonly number[]): (number | null)[] {
    if (this.n === 0) return ps.map(() => null);
    return ps.map((p) => {
      const rank = nearestRank(this.n, p);
      let reached = 0;
      for (let b = 0; b <= this.top; b++) {
        reached += this.w[b];
        if (reached >= rank) return bucketValue(b);
      }
      return bucketValue(this.top);
    });
  }
}

// ───────────────────────── cells

interface Cell {
  backend: string;
  model: string;
  source: string;
  totals: CallTotals;
  dur: Hist;
  ttft: Hist;
}

/** One tier: period number → (backend, model, source) → cell. */
type Tier = Map<number, Map<string, Cell>>;

function addTo(tier: Tier, period: number, c: SummedCall): void {
  let cells = tier.get(period);
  if (!cells) tier.set(period, (cells = new Map()));
  const key = `${c.backend}\u0000${c.model}\u0000${c.source}`;
  let cell = cells.get(key);
  if (!cell) {
    cell = {
      backend: c.backend,
      model: c.model,
      source: c.source,
      totals: emptyTotals(),
      dur: new Hist(),
      ttft: new Hist(),
    };
    cells.set(key, cell);
  }
  addCall(cell.totals, c);
  const n = c.count > 1 ? c.count : 1;
  cell.dur.add(c.duration_ms, n);
  if (c.ttft_ms !== null) cell.ttft.add(c.ttft_ms, n);
}

/** A group being summed. */
class Acc {
  readonly totals = emptyTotals();
  reporting = 0;
  unreported = 0;
  readonly dur = new Merged();
  readonly ttft = new Merged();

  constructor(readonly key: string) {}

  add(cell: Cell, reports: boolean): void {
    addTotals(this.totals, cell.totals);
    if (reports) this.reporting += cell.totals.prompt_tokens;
    else this.unreported += cell.totals.prompt_tokens;
    this.dur.add(cell.dur);
    this.ttft.add(cell.ttft);
  }

  stats(): GroupStats {
    const [p50, p95] = this.dur.percentiles([50, 95]);
    const [t50, t95] = this.ttft.percentiles([50, 95]);
    const t = this.totals;
    return {
      key: this.key,
      ...t,
      reporting_prompt_tokens: this.reporting,
      unreported_prompt_tokens: this.unreported,
      cache_hit_share: cacheHitShare(t.cached_tokens, this.reporting),
      p50_ms: p50,
      p95_ms: p95,
      ttft_p50_ms: t50,
      ttft_p95_ms: t95,
    };
  }
}

function sumInto(groups: Map<string, Acc>, key: string, cell: Cell, reports: boolean): void {
  let acc = groups.get(key);
  if (!acc) groups.set(key, (acc = new Acc(key)));
  acc.add(cell, reports);
}

const byCalls = (a: GroupStats, b: GroupStats) => b.calls - a.calls || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

export class CallsRollup {
  private readonly hours: Tier = new Map();
  private readonly days: Tier = new Map();
  /** Backends with a call that reported a cache read or write among those the rollup holds (`reportsCache`). */
  private cacheReporting = new Set<string>();
  private readonly now: () => number;
  /** Rows added so far. */
  added = 0;

  constructor(opts: { now?: () => number } = {}) {
    this.now = opts.now ?? Date.now;
  }

  add(c: SummedCall): void {
    this.added++;
    if (reportsCache(c)) this.cacheReporting.add(c.backend);
    addTo(this.days, Math.floor(c.ts / DAY_MS), c);
    const hour = Math.floor(c.ts / HOUR_MS);
    if (hour >= this.firstHourKept()) addTo(this.hours, hour, c);
  }

  /** Drops the days wholly before `ts` (retention pruned their rows) and hours past the tier. */
  forgetBefore(ts: number): void {
    const firstDay = Math.floor(ts / DAY_MS);
    if (Number.isFinite(firstDay)) for (const day of this.days.keys()) if (day < firstDay) this.days.delete(day);
    // a backend whose reporting calls were all pruned reports no more, as aggregate() sees the disk
    this.cacheReporting = new Set();
    for (const cells of this.days.values())
      for (const cell of cells.values()) if (reportsCache(cell.totals)) this.cacheReporting.add(cell.backend);
    const firstHour = this.firstHourKept();
    for (const hour of this.hours.keys()) if (hour < firstHour) this.hours.delete(hour);
  }

  /** The first hour the hourly tier answers for. */
  firstHourKept(): number {
    return Math.floor(this.now() / HOUR_MS) - HOUR_TIER_DAYS * 24;
  }

  /**
   * Sums over [since, until) widened to whole periods of `step` (hours only within the tier:
   * an older range is answered by days).
   */
  summary(range: { since: number; until: number; step: RollupStep }): CallSummary {
    let step = range.step;
    if (step === 'hour' && Math.floor(range.since / HOUR_MS) < this.firstHourKept()) step = 'day';
    const size = step === 'hour' ? HOUR_MS : DAY_MS;
    const tier = step === 'hour' ? this.hours : this.days;
    let from = Math.floor(range.since / size);
    const to = Math.max(from + 1, Math.ceil(range.until / size));
    // an open-ended range (since 0) lists periods from the first one with calls, not from 1970
    if (to - from > MAX_PERIODS) from = Math.max(from, Math.min(to - 1, ...[...tier.keys()].filter((p) => p < to)));
    const total = new Acc('total');
    const groups = { backend: new Map<string, Acc>(), model: new Map<string, Acc>(), source: new Map<string, Acc>() };
    const series: SeriesPoint[] = [];
    const seen = new Set<string>();
    const periods =
      to - from <= tier.size
        ? Array.from({ length: to - from }, (_, i) => from + i)
        : [...tier.keys()].filter((p) => p >= from && p < to).sort((a, b) => a - b);
    const points = new Map<number, Acc>();
    for (const period of periods) {
      const cells = tier.get(period);
      if (!cells) continue;
      const point = new Acc(String(period));
      points.set(period, point);
      for (const cell of cells.values()) {
        const reports = this.cacheReporting.has(cell.backend);
        seen.add(cell.backend);
        total.add(cell, reports);
        point.add(cell, reports);
        sumInto(groups.backend, cell.backend, cell, reports);
        sumInto(groups.model, cell.model, cell, reports);
        sumInto(groups.source, cell.source, cell, reports);
      }
    }
    for (let p = from; p < to; p++) {
      const t = p * size;
      const stats = (points.get(p) ?? new Acc('')).stats();
      series.push({
        ...stats,
        key: new Date(t)
          .toISOString()
          .slice(0, step === 'hour' ? 16 : 10)
          .replace('T', ' '),
        t,
      });
    }
    const list = (m: Map<string, Acc>) => [...m.values()].map((a) => a.stats()).sort(byCalls);
    return {
      since: from * size,
      until: to * size,
      step,
      total: total.stats(),
      backend: list(groups.backend),
      model: list(groups.model),
      source: list(groups.source),
      series,
      silentBackends: [...seen].filter((b) => !this.cacheReporting.has(b)).sort(),
    };
  }
}
