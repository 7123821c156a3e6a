/**
 * GET /health/deep (admin): every backend with its circuit, its last error and when, its failure
 * counts, its API keys' states and its wake state, and the scheduler's parked calls by type key.
 * Pure: it renders what the HealthView reads.
 */
import type { BackendState } from '../backends/registry.ts';
import type { ParkedTicketSnapshot } from '../scheduler/index.ts';
import { enabledCounts, type HealthView } from './health.ts';

/**
 * closed: up, calls go there; open: down, the next health check is not due yet; half_open:
 * down and its next check (the trial) is due or running.
 */
export type CircuitState = 'closed' | 'open' | 'half_open';

export function circuitState(b: BackendState, now: number): CircuitState {
  if (b.healthy) return 'closed';
  return b.nextCheckAt !== undefined && b.nextCheckAt > now ? 'open' : 'half_open';
}

export function deepHealth(view: HealthView, now = Date.now()) {
  const sched = view.slots();
  const slots = new Map(sched.backends.map((s) => [s.name, s]));
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  const backends = Object.fromEntries(
    view.backends().map((b) => [
      b.name,
      {
        type: b.spec.type,
        enabled: b.spec.enabled,
        healthy: b.healthy,
        draining: b.draining ?? false,
        circuit: circuitState(b, now),
        checked_at: iso(b.checkedAt),
        next_check_at: iso(b.nextCheckAt),
        error: b.error ? { kind: b.error.kind, status: b.error.status ?? null, detail: b.error.detail } : null,
        last_error: b.lastError
          ? {
              kind: b.lastError.kind,
              status: b.lastError.status ?? null,
              detail: b.lastError.detail,
              at: iso(b.lastError.at),
            }
          : null,
        failures: {
          consecutive: b.consecutiveFailures,
          total: b.failuresTotal ?? 0,
          times_down: b.timesDown ?? 0,
        },
        inflight: slots.get(b.name)?.inflight ?? 0,
        max_concurrent: b.cap,
        keys: view.keys?.(b.name) ?? null,
        wake: view.wake?.(b.name) ?? null,
      },
    ]),
  );
  return {
    status: enabledCounts(view).status,
    detail: 'deep',
    uptime_s: Math.round((now - view.startedAt) / 1000),
    backends,
    queue: { total: sched.parked.length, by_type_key: queueByTypeKey(sched.parked) },
  };
}

/** Parked calls counted under every type key they can run as: how many, the oldest's age, the soonest eta. */
export function queueByTypeKey(parked: readonly ParkedTicketSnapshot[]) {
  const out: Record<string, { parked: number; oldest_age_s: number; soonest_eta_s: number | null }> = {};
  for (const w of parked) {
    for (const key of w.typeKeys) {
      const q = (out[key] ??= { parked: 0, oldest_age_s: 0, soonest_eta_s: null });
      q.parked++;
      q.oldest_age_s = Math.max(q.oldest_age_s, w.ageMs / 1000);
      if (w.etaS !== undefined) q.soonest_eta_s = Math.min(q.soonest_eta_s ?? Infinity, w.etaS);
    }
  }
  return out;
}
