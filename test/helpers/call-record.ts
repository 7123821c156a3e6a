/** A call-log row with plain defaults (user 1, backend `b`, model `m`, status 200), for stats tests. */
import type { CallRecord } from '../../src/stats/record.ts';

let seq = 0;

export function callRecord(over: Partial<CallRecord> = {}): CallRecord {
  return {
    ts: Date.UTC(2026, 2, 15, 12),
    request_id: `r-${++seq}`,
    duration_ms: 10,
    ttft_ms: null,
    endpoint: '/v1/chat/completions',
    source: 'kid',
    user_id: 1,
    requested_model: 'm',
    model: 'm',
    backend: 'b',
    status: 200,
    reason: null,
    prompt_tokens: 1,
    completion_tokens: 1,
    cached_tokens: 0,
    cache_write_tokens: 0,
    reasoning: null,
    cost_usd: 0,
    upstream_cost_usd: null,
    ...over,
  };
}
