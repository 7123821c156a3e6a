/**
 * What the dashboard shows, read off the live gateway: a card per backend, the parked calls
 * and jobs, running media jobs with their progress, the last calls. Plain data, the same for
 * the first render and for every `/ui/events` update.
 */
import type { BackendState } from '../backends/registry.ts';
import type { KeyStateView } from '../backends/key-pool.ts';
import type { BackendSlotsSnapshot } from '../scheduler/index.ts';
import type { CallRow } from '../stats/call-log.ts';
import type { JobView, MediaCaller } from '../media/service-types.ts';
import type { UiServices } from './services.ts';
import type { WakeStateView } from '../backends/wake/waker.ts';

/** The console reads every job (admin view). */
export const CONSOLE_CALLER: MediaCaller = Object.freeze({
  owner: 'console',
  admin: true,
  allow: [],
  source: 'console',
  userId: null,
});

export interface BackendCard {
  name: string;
  type: string;
  enabled: boolean;
  healthy: boolean;
  draining: boolean;
  error: { kind: string; detail: string; since: number } | null;
  models: number;
  modelNames: string[];
  inflight: number;
  /** 0 = unlimited. */
  cap: number;
  paid: boolean;
  /** Output tokens per second (LLM), when measured. */
  speed: number | null;
  /** Seconds per job per generation alias (ComfyUI), when measured. */
  jobSeconds: Record<string, number>;
  lastTypeKey: string | null;
  group: string | null;
  /** Wake-on-LAN: its state and the seconds since its packet; null without `wake`. */
  wake: { state: string; sinceS: number | null } | null;
  /** A key pool's states, masked (never a key); null without a pool. */
  keys: KeyStateView[] | null;
  /** Out of rotation: rate-limited (a sole key, or every pooled key muted), for this long. */
  resting: { reason: number; secondsLeft: number } | null;
}

export interface QueueRow {
  alias: string;
  kind: 'call' | 'job';
  ageS: number;
  remainingS: number;
  position: number;
  backends: string[];
  /** The scheduler's predicted wait, seconds; null when it has none. */
  etaS: number | null;
}

export interface DashboardModel {
  now: number;
  backends: BackendCard[];
  queue: QueueRow[];
  jobs: JobView[];
  calls: CallRow[];
  counts: { backends: number; up: number; inflight: number; parked: number; runningJobs: number };
}

export function dashboardModel(services: UiServices, now = Date.now()): DashboardModel {
  const snapshot = services.slots();
  const slotsOf = new Map(snapshot.backends.map((s) => [s.name, s]));
  const backends = services.registry
    .list()
    .map((b) => card(b, slotsOf.get(b.name), now, services.wake?.stateOf(b.name)));
  const generationAliases = new Set(services.generations.names());
  const queue = snapshot.parked.map((p, i): QueueRow => ({
    alias: p.alias,
    kind: generationAliases.has(p.alias) ? 'job' : 'call',
    ageS: p.ageMs / 1000,
    remainingS: p.remainingMs / 1000,
    position: i + 1,
    backends: p.backends,
    etaS: p.etaS ?? null,
  }));
  const jobs = [
    ...services.media.list(CONSOLE_CALLER, { status: 'running', limit: 20 }),
    ...services.media.list(CONSOLE_CALLER, { status: 'queued', limit: 20 }),
  ];
  const calls = services.callLog.recent({ limit: 20 });
  return {
    now,
    backends,
    queue,
    jobs,
    calls,
    counts: {
      backends: backends.length,
      up: backends.filter((b) => b.enabled && b.healthy).length,
      inflight: backends.reduce((sum, b) => sum + b.inflight, 0),
      parked: queue.length,
      runningJobs: jobs.filter((j) => j.status === 'running').length,
    },
  };
}

function card(
  b: BackendState,
  slots: BackendSlotsSnapshot | undefined,
  now: number,
  wake?: WakeStateView | null,
): BackendCard {
  const rest = b.resting && b.resting.until > now ? b.resting : undefined;
  return {
    name: b.name,
    type: b.spec.type,
    enabled: b.spec.enabled,
    healthy: b.healthy,
    draining: b.draining === true,
    error: b.error ? { kind: b.error.kind, detail: b.error.detail, since: b.error.since } : null,
    models: b.models.length,
    modelNames: b.models.slice(0, 6).map((m) => m.id),
    inflight: slots?.inflight ?? 0,
    cap: b.cap,
    paid: b.spec.paid,
    speed: slots?.speed ?? null,
    jobSeconds: slots?.jobSeconds ?? {},
    lastTypeKey: slots?.lastTypeKey ?? null,
    group: b.spec.gpu_group ?? null,
    wake: wake ? { state: wake.state, sinceS: wake.since_s } : null,
    keys: b.keys?.states(now) ?? null,
    resting: rest ? { reason: rest.reason, secondsLeft: Math.ceil((rest.until - now) / 1000) } : null,
  };
}
