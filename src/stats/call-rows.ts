/**
 * Calls as stats.db stores them: the column list, the normalisation of a record into a row,
 * and the per-user quota counters a batch adds. Pure; shared by the main thread and the
 * writer thread.
 */
import { utcDayNumber } from './period.ts';
import { callCount, countsTowardQuota, quotaUsageOfRecord } from './quota-rules.ts';
import type { CallRecord } from './record.ts';

/** Columns of `calls` besides `id`, in insert order. */
export const CALL_COLUMNS = [
  'ts', 'request_id', 'duration_ms', 'ttft_ms', 'endpoint', 'source', 'user_id', 'requested_model', 'model',
  'backend', 'status', 'reason', 'prompt_tokens', 'completion_tokens', 'cached_tokens', 'cache_write_tokens',
  'reasoning', 'cost_usd', 'upstream_cost_usd', 'usage_estimated', 'paid', 'count',
] as const;

/** A call row as stored, without its id (flags as SQLite stores them: 0 or 1). */
export type StoredCall = Omit<
  CallRecord, 'request_body' | 'response_body' | 'usage_estimated' | 'paid' | 'count' | 'usage_only'
> & {
  usage_estimated: 0 | 1;
  paid: 0 | 1;
  /** Calls the row stands for (folded refusals), at least 1. */
  count: number;
};

/** Quota usage a batch adds to one user's UTC day. */
export interface QuotaUsage {
  user_id: number;
  day: number;
  requests: number;
  cost: number;
}

/** The raw captured bodies of one call of a batch (`index` into the batch's calls). */
export interface CapturedBody {
  index: number;
  request?: Uint8Array | string;
  response?: Uint8Array | string;
}

/**
 * What one write transaction stores: rows, their captured bodies, the quota counters they add.
 * Records marked `usage_only` add to the counters but are no rows.
 */
export interface CallBatch {
  calls: StoredCall[];
  /** Only calls with a body, and none at all when capture is off. */
  bodies: CapturedBody[];
  usage: QuotaUsage[];
}

/** The batch that stores `records` (bodies kept only when `captureBodies`). */
export function callBatchOf(records: readonly CallRecord[], captureBodies: boolean): CallBatch {
  const rows = records.some((rec) => rec.usage_only) ? records.filter((rec) => !rec.usage_only) : records;
  return {
    calls: rows.map(storedCall),
    bodies: captureBodies ? capturedBodiesOf(rows) : [],
    usage: quotaUsageOf(records),
  };
}

/** The captured bodies of the records that have any. */
export function capturedBodiesOf(records: readonly CallRecord[]): CapturedBody[] {
  const out: CapturedBody[] = [];
  records.forEach((rec, index) => {
    const body = capturedBodyOf(rec, index);
    if (body) out.push(body);
  });
  return out;
}

/** The bodies of the record at `index` of a batch, or null without any (a non-body is ignored). */
export function capturedBodyOf(rec: CallRecord, index: number): CapturedBody | null {
  const request = asBody(rec.request_body);
  const response = asBody(rec.response_body);
  return request === undefined && response === undefined ? null : { index, request, response };
}

/** A string or bytes; anything else in a malformed record must not fail the batch. */
function asBody(body: unknown): Uint8Array | string | undefined {
  return typeof body === 'string' || body instanceof Uint8Array ? body : undefined;
}

/** Per user and UTC day: the calls of a batch that count towards quotas, and their cost. */
export function quotaUsageOf(batch: readonly CallRecord[]): QuotaUsage[] {
  const tally = new QuotaUsageTally();
  for (const rec of batch) tally.add(rec);
  return tally.list();
}

/** Sums the quota usage of records one at a time (the same rules as the pending counters). */
export class QuotaUsageTally {
  private readonly byUser = new Map<number, Map<number, QuotaUsage>>();

  add(rec: CallRecord): void {
    if (typeof rec.user_id !== 'number' || !countsTowardQuota(rec)) return;
    let days = this.byUser.get(rec.user_id);
    if (!days) this.byUser.set(rec.user_id, (days = new Map()));
    const day = utcDayNumber(rec.ts);
    let u = days.get(day);
    if (!u) days.set(day, (u = { user_id: rec.user_id, day, requests: 0, cost: 0 }));
    const adds = quotaUsageOfRecord(rec);
    u.requests += adds.requests;
    u.cost += adds.cost;
  }

  list(): QuotaUsage[] {
    return [...this.byUser.values()].flatMap((days) => [...days.values()]);
  }
}

/**
 * A record as stored: counts made whole and non-negative, missing fields filled, no bodies.
 * A malformed record must never fail the batch (a poison row would wedge every flush).
 */
export function storedCall(rec: CallRecord): StoredCall {
  return {
    ts: whole(rec.ts),
    request_id: String(rec.request_id ?? ''),
    duration_ms: whole(rec.duration_ms),
    ttft_ms: rec.ttft_ms === null || rec.ttft_ms === undefined ? null : whole(rec.ttft_ms),
    endpoint: String(rec.endpoint ?? ''),
    source: String(rec.source ?? ''),
    user_id: Number.isInteger(rec.user_id) ? rec.user_id : null,
    requested_model: nullableString(rec.requested_model),
    model: nullableString(rec.model),
    backend: String(rec.backend ?? ''),
    status: whole(rec.status),
    reason: nullableString(rec.reason),
    prompt_tokens: whole(rec.prompt_tokens),
    completion_tokens: whole(rec.completion_tokens),
    cached_tokens: whole(rec.cached_tokens),
    cache_write_tokens: whole(rec.cache_write_tokens),
    reasoning: nullableString(rec.reasoning),
    cost_usd: Number.isFinite(rec.cost_usd) && rec.cost_usd > 0 ? rec.cost_usd : 0,
    upstream_cost_usd:
      typeof rec.upstream_cost_usd === 'number' && Number.isFinite(rec.upstream_cost_usd) && rec.upstream_cost_usd >= 0
        ? rec.upstream_cost_usd
        : null,
    usage_estimated: rec.usage_estimated === true ? 1 : 0,
    paid: rec.paid === false ? 0 : 1,
    count: callCount(rec),
  };
}

function whole(n: number): number {
  return Number.isFinite(n) && n > 0 ? Math.round(n) : 0;
}

function nullableString(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}
