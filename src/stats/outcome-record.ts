import type { ModelPricing } from '../backends/types.ts';
import type { CallOutcome } from './call-outcome.ts';
import { computeCost } from './cost.ts';
import { REFUSED_BACKEND, type CallRecord } from './record.ts';

/** The route template of each proxied endpoint (a metric label, never a raw URL). */
export const ENDPOINT_ROUTES: Record<string, string> = {
  chat: '/v1/chat/completions',
  completions: '/v1/completions',
  embeddings: '/v1/embeddings',
  messages: '/v1/messages',
  responses: '/v1/responses',
  speech: '/v1/audio/speech',
  transcriptions: '/v1/audio/transcriptions',
  translations: '/v1/audio/translations',
  models: '/v1/models',
};

export interface PricingContext {
  pricing?: ModelPricing;
  /** Unpaid (local) backends cost nothing, whatever a pricing table or the upstream says. */
  paid: boolean;
}

/** Turns what the proxy (or a refusal) reports into one call-log row, with its cost. */
export function toCallRecord(o: CallOutcome, price: PricingContext, captureBodies: boolean): CallRecord {
  const u = o.usage;
  const usage = {
    prompt_tokens: u?.prompt_tokens ?? 0,
    completion_tokens: u?.completion_tokens ?? 0,
    cached_tokens: u?.cached_tokens ?? 0,
    cache_write_tokens: u?.cache_write_tokens ?? 0,
  };
  return {
    ts: o.startedAt,
    request_id: o.requestId,
    duration_ms: Math.max(0, Math.round(o.durationMs)),
    ttft_ms: o.ttftMs === null ? null : Math.max(0, Math.round(o.ttftMs)),
    endpoint: ENDPOINT_ROUTES[o.endpoint] ?? o.endpoint,
    source: o.source,
    user_id: o.userId,
    requested_model: o.requestedModel,
    model: o.model,
    backend: o.backend ?? REFUSED_BACKEND,
    status: o.status,
    reason: o.reason,
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    cached_tokens: usage.cached_tokens,
    cache_write_tokens: usage.cache_write_tokens,
    reasoning: o.reasoning ?? null,
    cost_usd: u ? computeCost(usage, price.pricing, { local: !price.paid, shape: 'openai' }) : 0,
    // kept as reported, also from a free backend (which spends nothing: see effectiveCost)
    upstream_cost_usd: u?.cost ?? null,
    usage_estimated: u !== undefined && o.usageEstimated === true,
    paid: price.paid,
    count: 1,
    route: o.route ?? null,
    request_body: captureBodies ? o.requestBody : undefined,
    response_body: captureBodies ? o.responseBody : undefined,
  };
}
