/**
 * The bodies of GET /health, from a read-only view of the fleet: a summary anyone may see
 * (status and counts, nothing that names a host, a model or an error) and the full picture
 * for admins.
 */
import type { BackendState } from '../backends/registry.ts';
import type { BackendResidency } from '../backends/residency.ts';
import { pricingReport } from '../backends/pricing.ts';
import type { ConfigProblem } from '../config/load.ts';
import { outReason } from '../routing/refusal.ts';
import type { AliasCollision } from '../routing/resolve.ts';
import type { SchedulerSnapshot, ServiceFiguresSnapshot } from '../scheduler/index.ts';
import type { MediaInventory } from '../media/compiler/inventory.ts';
import { kindOf } from '../backends/kinds/index.ts';
import type { ReadinessInputs } from './readiness.ts';

/** What /health reads; the gateway provides it. */
export interface HealthView {
  backends(): readonly BackendState[];
  slots(): SchedulerSnapshot;
  /** Which models a box holds loaded (undefined before its first read). */
  residency(backend: string): BackendResidency | undefined;
  isOpen(): boolean;
  aliasCollisions(): AliasCollision[];
  /** Glob aliases, most specific first (they are not listed in /v1/models). */
  aliasPatterns(): { pattern: string; target: unknown }[];
  /** A ComfyUI backend's inventory, as last read. */
  mediaInventory(backend: string): MediaInventory | undefined;
  /** Generation aliases: their candidates, the problems found checking them, jobs running now. */
  media(): {
    aliases: Record<string, string[]>;
    problems: { path: string; message: string; severity: string }[];
    running: number;
  };
  configSource: string;
  /** Problems of the last rejected reload (the previous config stays in force). */
  reloadProblems(): ConfigProblem[];
  startedAt: number;
  /** A backend's API keys' states, masked (null without a key pool), for /health/deep. */
  keys?(backend: string): unknown;
  /** A backend's Wake-on-LAN state (null without `wake`), for /health/deep. */
  wake?(backend: string): unknown;
  /** GET /health/ready's inputs, read now. */
  readiness(): ReadinessInputs;
}

const OPEN_WARNING =
  'OPEN: no master key and no users; anyone who can reach this port may use it. Set api_key or create an admin user.';

/** The fleet's status from its enabled backends: ok (all up), degraded (some) or down (none). */
export function enabledCounts(view: HealthView) {
  const list = view.backends().filter((b) => b.spec.enabled);
  const healthy = list.filter((b) => b.healthy).length;
  return {
    status: healthy === list.length ? 'ok' : healthy > 0 ? 'degraded' : 'down',
    total: list.length,
    healthy,
  };
}

function authState(view: HealthView) {
  return view.isOpen() ? { open: true, warning: OPEN_WARNING } : { open: false };
}

const uptime = (view: HealthView) => Math.round((Date.now() - view.startedAt) / 1000);

/** Status and counts only: nothing that names a host, a model or an error. */
export function healthSummary(view: HealthView) {
  const counts = enabledCounts(view);
  const sched = view.slots();
  return {
    status: counts.status,
    detail: 'summary; send an admin key for backends, models, parked calls and reload errors',
    auth: authState(view),
    uptime_s: uptime(view),
    backends: {
      total: counts.total,
      healthy: counts.healthy,
      inflight: sched.backends.reduce((sum, b) => sum + b.inflight, 0),
    },
    parked: { total: sched.parked.length },
  };
}

/** Everything an operator needs to see at a glance. */
export function fullHealth(view: HealthView) {
  const sched = view.slots();
  const slots = new Map(sched.backends.map((b) => [b.name, b]));
  const backends = Object.fromEntries(
    view.backends().map((b) => {
      const s = slots.get(b.name);
      return [
        b.name,
        {
          type: b.spec.type,
          host: b.spec.host ?? null,
          enabled: b.spec.enabled,
          healthy: b.healthy,
          error: b.error ?? null,
          out: outReason(b, Date.now()) ?? null,
          models: b.models.length,
          inflight: s?.inflight ?? 0,
          max_concurrent: b.cap,
          paid: b.spec.paid,
          speed: s?.speed ?? null,
          // learnt from every completed call (issue 19); per model too
          ...speedFigures(s?.service),
          speed_by_model: Object.fromEntries(
            Object.entries(s?.serviceByModel ?? {}).map(([m, f]) => [m, speedFigures(f)]),
          ),
          // seconds a load of that model added to a call here, by model (learnt from calls that needed one)
          swap_s: s?.swapSeconds ?? {},
          last_type_key: s?.lastTypeKey ?? null,
          discovered_at: b.discoveredAt ? new Date(b.discoveredAt).toISOString() : null,
          residency: residencyView(view.residency(b.name)),
          // Wake-on-LAN: waking (with since_s, seconds since the packet), awake, failed…; null without `wake`
          wake: view.wake?.(b.name) ?? null,
          ...keyHealth(b, Date.now()),
          ...(kindOf(b.spec).isMedia ? { inventory: inventoryCounts(view.mediaInventory(b.name)) } : {}),
          // where each model's prices come from: config, discovered, built-in or none
          ...(kindOf(b.spec).pricedPerToken ? { pricing: pricingReport(b.spec, b.models) } : {}),
        },
      ];
    }),
  );
  return {
    status: enabledCounts(view).status,
    detail: 'full',
    auth: authState(view),
    uptime_s: uptime(view),
    config: { source: view.configSource, reload_errors: view.reloadProblems() },
    backends,
    parked: {
      total: sched.parked.length,
      by_alias: sched.parkedByAlias,
      // eta_s: the scheduler's predicted wait for a slot (and its model loaded), null when it has none
      waiters: sched.parked.map((w) => ({
        alias: w.alias,
        age_s: w.ageMs / 1000,
        remaining_s: w.remainingMs / 1000,
        eta_s: w.etaS ?? null,
      })),
    },
    alias_collisions: view.aliasCollisions(),
    alias_patterns: view.aliasPatterns(),
    media: view.media(),
  };
}

/** A key pool's states (masked: a hint, never a key) and a rest (rate-limited, every key muted), when there are. */
function keyHealth(b: BackendState, now: number) {
  const rest = b.resting && b.resting.until > now ? b.resting : undefined;
  return {
    ...(b.keys ? { keys: b.keys.states(now) } : {}),
    ...(rest
      ? {
          resting: {
            until: new Date(rest.until).toISOString(),
            seconds_left: Math.ceil((rest.until - now) / 1000),
            reason: rest.reason,
          },
        }
      : {}),
  };
}

/** A backend's (or model's) learnt speed figures, null where never measured. */
function speedFigures(f: ServiceFiguresSnapshot | undefined) {
  return {
    decode_tok_s: f?.decodeRate ?? null,
    prefill_tok_s: f?.prefillRate ?? null,
    service_s: f?.serviceSeconds ?? null,
    speed_samples: f?.samples ?? 0,
  };
}

/** How many of each model file a ComfyUI box offers (null before its first /object_info). */
function inventoryCounts(inv: MediaInventory | undefined) {
  if (!inv) return null;
  return {
    checkpoints: inv.checkpoints.length,
    unets: inv.unets.length,
    vaes: inv.vaes.length,
    clips: inv.clips.length,
    loras: inv.loras.length,
    node_classes: inv.classes.length,
  };
}

/** Loaded models with where the gateway learnt it (`probe` | `call`) and since when; null before a read. */
function residencyView(r: BackendResidency | undefined) {
  if (!r) return null;
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    kind: r.kind,
    mode: r.mode,
    known: r.known,
    capacity: r.capacity,
    read_at: r.readAt === null ? null : iso(r.readAt),
    models: r.models.map((m) => ({ model: m.model, source: m.source, since: iso(m.since) })),
  };
}
