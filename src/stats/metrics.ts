/**
 * Prometheus metrics for `GET /metrics`, on a registry of their own per instance (tests build
 * many apps in one process; the prom-client global registry is never used).
 *
 * Labels stay low-cardinality: endpoint (route template), backend, status, direction, alias,
 * discovery error kind. No user, key, source or request id. No model label either: client-
 * supplied model names are unbounded (typos, refusals) and a cloud backend lists hundreds of
 * models; per-model questions are answered by the call log's aggregates.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { effectiveCost } from './cost.ts';
import type { CallRecord } from './record.ts';

/** Seconds; reaches ten minutes because a cold model load on a homelab GPU takes minutes. */
export const LATENCY_BUCKETS_S = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export interface BackendGauges {
  name: string;
  up: boolean;
  inflight: number;
  /** In-flight cap; 0 = unlimited. */
  cap: number;
}

export interface GatewayMetricsOptions {
  /**
   * Register prom-client's process/Node.js metrics (default true). prom-client installs a GC
   * observer and an event-loop monitor for each registry that it never removes, so tests that
   * build many apps in one process may turn this off.
   */
  defaultMetrics?: boolean;
}

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly contentType: string = this.registry.contentType;

  private readonly requests = new Counter({
    name: 'llm_gateway_requests_total',
    help: 'Calls handled, refused ones included (backend "(refused)").',
    labelNames: ['endpoint', 'backend', 'status'] as const,
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'llm_gateway_request_duration_seconds',
    help: 'Time from request to the last byte of the response.',
    labelNames: ['endpoint', 'backend'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [this.registry],
  });
  private readonly ttft = new Histogram({
    name: 'llm_gateway_ttft_seconds',
    help: 'Time to the first byte of the response body (includes parking and model loads).',
    labelNames: ['backend'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [this.registry],
  });
  private readonly tokens = new Counter({
    name: 'llm_gateway_tokens_total',
    help: 'Tokens processed; direction "in" includes cached prompt tokens.',
    labelNames: ['backend', 'direction'] as const,
    registers: [this.registry],
  });
  private readonly estimatedTokens = new Counter({
    name: 'llm_gateway_estimated_tokens_total',
    help: 'The part of llm_gateway_tokens_total the gateway estimated because the backend reported no usage.',
    labelNames: ['backend', 'direction'] as const,
    registers: [this.registry],
  });
  private readonly cacheTokens = new Counter({
    name: 'llm_gateway_cache_tokens_total',
    help: 'Prompt tokens read from ("read") or written to ("write") the provider prompt cache.',
    labelNames: ['backend', 'kind'] as const,
    registers: [this.registry],
  });
  private readonly cost = new Counter({
    name: 'llm_gateway_cost_usd_total',
    help: 'USD spent: upstream-reported cost where available, else computed from pricing.',
    labelNames: ['backend'] as const,
    registers: [this.registry],
  });
  private readonly inflight = new Gauge({
    name: 'llm_gateway_backend_inflight',
    help: 'Calls in flight per backend.',
    labelNames: ['backend'] as const,
    registers: [this.registry],
  });
  private readonly cap = new Gauge({
    name: 'llm_gateway_backend_cap',
    help: 'In-flight cap per backend (0 = unlimited).',
    labelNames: ['backend'] as const,
    registers: [this.registry],
  });
  private readonly up = new Gauge({
    name: 'llm_gateway_backend_up',
    help: '1 when the backend is healthy, else 0.',
    labelNames: ['backend'] as const,
    registers: [this.registry],
  });
  private readonly parked = new Gauge({
    name: 'llm_gateway_parked_calls',
    help: 'Calls parked waiting for a slot, per requested alias or model.',
    labelNames: ['alias'] as const,
    registers: [this.registry],
  });
  private readonly discoveryErrors = new Counter({
    name: 'llm_gateway_discovery_errors_total',
    help: 'Failed discovery or health polls per backend and error kind.',
    labelNames: ['backend', 'kind'] as const,
    registers: [this.registry],
  });

  constructor(opts: GatewayMetricsOptions = {}) {
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** Counts one finished or refused call (free backends add no cost: see effectiveCost). */
  observeCall(rec: CallRecord): void {
    const backend = rec.backend;
    this.requests.inc({ endpoint: rec.endpoint, backend, status: String(rec.status) });
    this.duration.observe({ endpoint: rec.endpoint, backend }, seconds(rec.duration_ms));
    if (rec.ttft_ms !== null) this.ttft.observe({ backend }, seconds(rec.ttft_ms));
    addIfPositive(this.tokens, { backend, direction: 'in' }, rec.prompt_tokens);
    addIfPositive(this.tokens, { backend, direction: 'out' }, rec.completion_tokens);
    if (rec.usage_estimated) {
      addIfPositive(this.estimatedTokens, { backend, direction: 'in' }, rec.prompt_tokens);
      addIfPositive(this.estimatedTokens, { backend, direction: 'out' }, rec.completion_tokens);
    }
    addIfPositive(this.cacheTokens, { backend, kind: 'read' }, rec.cached_tokens);
    addIfPositive(this.cacheTokens, { backend, kind: 'write' }, rec.cache_write_tokens);
    addIfPositive(this.cost, { backend }, effectiveCost(rec));
  }

  /** Replaces the per-backend gauges (backends no longer listed disappear). */
  setBackendGauges(backends: readonly BackendGauges[]): void {
    this.inflight.reset();
    this.cap.reset();
    this.up.reset();
    for (const b of backends) {
      this.inflight.set({ backend: b.name }, b.inflight);
      this.cap.set({ backend: b.name }, b.cap);
      this.up.set({ backend: b.name }, b.up ? 1 : 0);
    }
  }

  /** Replaces the parked-calls gauge (aliases no longer listed disappear). */
  setParked(byAlias: Readonly<Record<string, number>>): void {
    this.parked.reset();
    for (const [alias, n] of Object.entries(byAlias)) this.parked.set({ alias }, n);
  }

  discoveryError(backend: string, kind: string): void {
    this.discoveryErrors.inc({ backend, kind });
  }

  /** The exposition text for `GET /metrics` (serve it with `contentType`). */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}

function seconds(ms: number): number {
  return Number.isFinite(ms) && ms > 0 ? ms / 1000 : 0;
}

function addIfPositive<L extends string>(counter: Counter<L>, labels: Partial<Record<L, string>>, n: number): void {
  if (Number.isFinite(n) && n > 0) counter.inc(labels, n);
}
