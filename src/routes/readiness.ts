/**
 * GET /health/ready's verdict, for Docker and Kubernetes health checks and the systemd unit's
 * ExecStartPost: ready only when the store can be written, a config is in force, and at least
 * one enabled backend is up (unless `ready_requires_backend: false`). Pure: the inputs are read
 * off the gateway by the route.
 */
import type { WritableVerdict } from '../store/writable.ts';

export interface ReadinessInputs {
  store: WritableVerdict;
  /** Where the config in force came from; undefined = none loaded. */
  configSource: string | undefined;
  /** The last reload was rejected (the previous config stays in force: still ready, but said). */
  reloadRejected: boolean;
  /** Enabled backends, and how many of them are up; `unknown`: not probed yet. */
  backends: { enabled: number; up: number; unknown: number };
  requiresBackend: boolean;
  /** Cluster mode: this instance's name and whether the cluster store (Redis) answers; absent = one gateway. */
  cluster?: { instance: string; reachable: boolean };
}

export interface Readiness {
  ready: boolean;
  reasons: string[];
  checks: {
    store: { ok: boolean; reason?: string; free_bytes?: number };
    config: { ok: boolean; source: string | null; reload_rejected: boolean };
    backends: { ok: boolean; required: boolean; enabled: number; up: number; not_probed_yet: number };
    cluster?: { ok: boolean; instance: string };
  };
}

export function readiness(i: ReadinessInputs): Readiness {
  const reasons: string[] = [];
  if (!i.store.ok) reasons.push(i.store.reason ?? 'the store cannot be written');
  const configOk = i.configSource !== undefined;
  if (!configOk) reasons.push('no configuration is loaded');
  const backendsOk = !i.requiresBackend || i.backends.up > 0;
  if (!backendsOk) reasons.push(noBackendReason(i.backends));
  // a load balancer should send nothing here while this instance cannot reach the others' Redis
  if (i.cluster && !i.cluster.reachable) reasons.push('the cluster store (Redis) is unreachable');
  return {
    ready: reasons.length === 0,
    reasons,
    checks: {
      store: { ok: i.store.ok, reason: i.store.reason, free_bytes: i.store.freeBytes },
      config: { ok: configOk, source: i.configSource ?? null, reload_rejected: i.reloadRejected },
      backends: {
        ok: backendsOk,
        required: i.requiresBackend,
        enabled: i.backends.enabled,
        up: i.backends.up,
        not_probed_yet: i.backends.unknown,
      },
      ...(i.cluster ? { cluster: { ok: i.cluster.reachable, instance: i.cluster.instance } } : {}),
    },
  };
}

function noBackendReason(b: ReadinessInputs['backends']): string {
  if (b.enabled === 0) return 'no backend is enabled (set ready_requires_backend: false to be ready without one)';
  if (b.unknown > 0) return `no backend is up yet (${b.unknown} of ${b.enabled} not probed yet)`;
  return `no backend is up (${b.enabled} enabled, all down)`;
}
