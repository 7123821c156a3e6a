/**
 * How the fleet's live state reaches the scheduler, the GPU switch and /metrics: pure
 * functions of the registry's backends, the effective config and the scheduler's snapshot.
 */
import { kindOf } from './backends/kinds/index.ts';
import type { BackendRegistry, BackendState } from './backends/registry.ts';
import { gpuGroupSettings } from './config/defaults.ts';
import type { GatewayConfig } from './config/types.ts';
import type { GpuSwitchMember } from './media/gpu-switch.ts';
import type { GroupLimits, Scheduler, SchedulerSnapshot } from './scheduler/index.ts';
import type { BackendGauges, GatewayMetrics } from './stats/metrics.ts';

/** A backend as the scheduler sees it: its slots, whether it is paid, and whether it may take work now. */
export function slotSpec(b: BackendState) {
  return {
    name: b.name,
    cap: b.cap,
    paid: b.spec.paid,
    available: b.spec.enabled && b.healthy && !b.draining && !b.resting,
    group: b.spec.gpu_group,
    kind: kindOf(b.spec).isMedia ? ('media' as const) : ('llm' as const),
  };
}

/** Slot caps of the GPU groups: every configured one and every one a backend names. */
export function groupCaps(cfg: GatewayConfig): Record<string, GroupLimits> {
  const names = new Set([
    ...Object.keys(cfg.gpu_groups),
    ...cfg.backends.flatMap((b) => (b.gpu_group ? [b.gpu_group] : [])),
  ]);
  return Object.fromEntries([...names].map((name) => [name, { cap: gpuGroupSettings(cfg, name).max_concurrent }]));
}

/** The backends sharing one GPU group's card, as the GPU switch unloads or frees them. */
export function groupMembers(backends: readonly BackendState[], group: string): GpuSwitchMember[] {
  return backends
    .filter((b) => b.spec.gpu_group === group)
    .map((b) => ({
      name: b.name,
      url: b.spec.url,
      type: b.spec.type,
      // a pool's first key: the unload request is the gateway's own, like discovery's
      ...(b.spec.api_key || b.spec.api_keys ? { apiKey: b.spec.api_key ?? b.spec.api_keys![0] } : {}),
    }));
}

/** The per-backend gauges of /metrics, read off live state just now. */
export function backendGauges(backends: readonly BackendState[], snapshot: SchedulerSnapshot): BackendGauges[] {
  const slots = new Map(snapshot.backends.map((b) => [b.name, b]));
  return backends.map((b) => ({
    name: b.name,
    up: b.healthy,
    inflight: slots.get(b.name)?.inflight ?? 0,
    cap: b.cap,
  }));
}

/** The Prometheus text of /metrics, with the fleet's gauges read off live state just now. */
export function renderFleetMetrics(
  metrics: GatewayMetrics,
  registry: Pick<BackendRegistry, 'list'>,
  scheduler: Pick<Scheduler, 'snapshot'>,
): Promise<string> {
  const snapshot = scheduler.snapshot();
  metrics.setBackendGauges(backendGauges(registry.list(), snapshot));
  metrics.setParked(snapshot.parkedByAlias);
  return metrics.render();
}
