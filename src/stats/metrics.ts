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

  private readonly requests = this.counter(
    'llm_gateway_requests_total',
    'Calls handled, refused ones included (backend "(refused)").',
    ['endpoint', 'backend', 'status'],
  );
  private readonly duration = this.histogram(
    'llm_gateway_request_duration_seconds',
    'Time from request to the last byte of the response.',
    ['endpoint', 'backend'],
  );
  private readonly ttft = this.histogram(
    'llm_gateway_ttft_seconds',
    'Time to the first byte of the response body (includes parking and model loads).',
    ['backend'],
  );
  private readonly tokens = this.counter(
    'llm_gateway_tokens_total',
    'Tokens processed; direction "in" includes cached prompt tokens.',
    ['backend', 'direction'],
  );
  private readonly estimatedTokens = this.counter(
    'llm_gateway_estimated_tokens_total',
    'The part of llm_gateway_tokens_total the gateway estimated because the backend reported no usage.',
    ['backend', 'direction'],
  );
  private readonly cacheTokens = this.counter(
    'llm_gateway_cache_tokens_total',
    'Prompt tokens read from ("read") or written to ("write") the provider prompt cache.',
    ['backend', 'kind'],
  );
  private readonly cost = this.counter(
    'llm_gateway_cost_usd_total',
    'USD spent: upstream-reported cost where available, else computed from pricing.',
    ['backend'],
  );
  private readonly inflight = this.gauge('llm_gateway_backend_inflight', 'Calls in flight per backend.', ['backend']);
  private readonly cap = this.gauge('llm_gateway_backend_cap', 'In-flight cap per backend (0 = unlimited).', [
    'backend',
  ]);
  private readonly up = this.gauge('llm_gateway_backend_up', '1 when the backend is healthy, else 0.', ['backend']);
  private readonly parked = this.gauge(
    'llm_gateway_parked_calls',
    'Calls parked waiting for a slot, per requested alias or model.',
    ['alias'],
  );
  private readonly discoveryErrors = this.counter(
    'llm_gateway_discovery_errors_total',
    'Failed discovery or health polls per backend and error kind.',
    ['backend', 'kind'],
  );

  private counter<L extends string>(name: string, help: string, labelNames: readonly L[]) {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  private gauge<L extends string>(name: string, help: string, labelNames: readonly L[]) {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram<L extends string>(name: string, help: string, labelNames: readonly L[]) {
    return new Histogram({ name, help, labelNames, buckets: LATENCY_BUCKETS_S, registers: [this.registry] });
  }

  constructor(opts: GatewayMetricsOptions = {}) {
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** Counts one finished or refused call (free backends add no cost: see effectiveCost). */
  observeCall(rec: CallRecord): void {
    const call = this.callChildren(rec.endpoint, rec.backend, rec.status);
    call.requests.inc();
    call.duration.observe(seconds(rec.duration_ms));
    const b = this.backendChildren(rec.backend);
    if (rec.ttft_ms !== null) b.ttft.observe(seconds(rec.ttft_ms));
    addIfPositive(b.tokensIn, rec.prompt_tokens);
    addIfPositive(b.tokensOut, rec.completion_tokens);
    if (rec.usage_estimated) {
      addIfPositive(b.estimatedIn, rec.prompt_tokens);
      addIfPositive(b.estimatedOut, rec.completion_tokens);
    }
    addIfPositive(b.cacheRead, rec.cached_tokens);
    addIfPositive(b.cacheWrite, rec.cache_write_tokens);
    addIfPositive(b.cost, effectiveCost(rec));
  }

  /**
   * prom-client hashes a label set on every `inc(labels)`; the children of a label set are
   * looked up once and kept (few: endpoints × backends × statuses).
   */
  private readonly calls = new Map<string, { requests: CounterChild; duration: HistogramChild }>();
  private readonly backends = new Map<string, ReturnType<GatewayMetrics['makeBackendChildren']>>();

  private callChildren(endpoint: string, backend: string, status: number) {
    const key = `${endpoint}\0${backend}\0${status}`;
    let children = this.calls.get(key);
    if (!children) {
      children = {
        requests: this.requests.labels({ endpoint, backend, status: String(status) }),
        duration: this.duration.labels({ endpoint, backend }),
      };
      this.calls.set(key, children);
    }
    return children;
  }

  private backendChildren(backend: string) {
    let children = this.backends.get(backend);
    if (!children) this.backends.set(backend, (children = this.makeBackendChildren(backend)));
    return children;
  }

  private makeBackendChildren(backend: string) {
    return {
      ttft: this.ttft.labels({ backend }),
      tokensIn: this.tokens.labels({ backend, direction: 'in' }),
      tokensOut: this.tokens.labels({ backend, direction: 'out' }),
      estimatedIn: this.estimatedTokens.labels({ backend, direction: 'in' }),
      estimatedOut: this.estimatedTokens.labels({ backend, direction: 'out' }),
      cacheRead: this.cacheTokens.labels({ backend, kind: 'read' }),
      cacheWrite: this.cacheTokens.labels({ backend, kind: 'write' }),
      cost: this.cost.labels({ backend }),
    };
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

type CounterChild = ReturnType<Counter<string>['labels']>;
type HistogramChild = ReturnType<Histogram<string>['labels']>;

function addIfPositive(counter: CounterChild, n: number): void {
  if (Number.isFinite(n) && n > 0) counter.inc(n);
}
