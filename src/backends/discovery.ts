import type { Dispatcher } from 'undici';
import type { BackendSpec } from '../config/types.ts';
import { describeError } from './errors.ts';
import type { MediaHealthCheck } from './media-health.ts';
import { probeBackend, ProbeError } from './probe.ts';
import { probeWithKeys } from './key-probe.ts';
import { redactBackendError } from './secret-scrub.ts';
import type { BackendRegistry } from './registry.ts';
import type { ResidencyReader } from './residency-read.ts';
import type { ResidencyTracker } from './residency.ts';
import type { BackendError, ModelInfo } from './types.ts';

export interface DiscoveryDeps {
  registry: BackendRegistry;
  dispatcherFor: (spec: BackendSpec) => Dispatcher;
  settings: () => { healthCheckIntervalS: number; fastProbeIntervalS: number };
  /** True while calls are parked: unhealthy backends are then re-probed fast. */
  hasParked: () => boolean;
  saveModels?: (backend: string, models: ModelInfo[]) => void;
  onError?: (backend: string, error: Omit<BackendError, 'since'>) => void;
  log: {
    warn(obj: object, msg: string): void;
    info(obj: object, msg: string): void;
    debug(obj: object, msg: string): void;
  };
  /**
   * True for a backend nobody configured: one of the embedded default's loopback guesses. Until
   * it first answers, its failures are logged at debug (a port nobody listens on is no news).
   */
  isGuess?: (name: string) => boolean;
  probeTimeoutMs?: number;
  /** ComfyUI backends' queue watchdog and inventory. */
  comfy?: MediaHealthCheck;
  now?: () => number;
  /** Reads which models each box holds after every good probe (never loading one). */
  residency?: { reader: ResidencyReader; tracker: ResidencyTracker };
}

/**
 * Keeps the registry's view of every backend fresh: polls all backends in parallel every
 * `health_check_interval`, and while calls are parked re-probes the unhealthy ones every
 * `fast_probe_interval_s`. One probe per backend at a time (a half-open backend gets one
 * probe, not a stampede).
 */
export class Discovery {
  private pollTimer?: NodeJS.Timeout;
  private fastTimer?: NodeJS.Timeout;
  /** The probe running per backend, with the spec it probes. */
  private readonly inFlight = new Map<string, { spec: BackendSpec; done: Promise<void> }>();
  private stopped = false;
  /** Backends that answered a probe at least once since start-up. */
  private readonly answered = new Set<string>();

  constructor(private readonly deps: DiscoveryDeps) {}

  start(): void {
    this.stopped = false;
    void this.pollAll();
    this.reschedule();
  }

  /** Re-arms the timers with the current settings (after a config reload). */
  reschedule(): void {
    if (this.stopped) return;
    clearInterval(this.pollTimer);
    clearInterval(this.fastTimer);
    const { healthCheckIntervalS, fastProbeIntervalS } = this.deps.settings();
    if (healthCheckIntervalS > 0) {
      this.pollTimer = setInterval(() => void this.pollAll(), healthCheckIntervalS * 1000);
      this.pollTimer.unref();
    }
    if (fastProbeIntervalS > 0) {
      this.fastTimer = setInterval(() => void this.probeUnhealthyWhileParked(), fastProbeIntervalS * 1000);
      this.fastTimer.unref();
    }
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.pollTimer);
    clearInterval(this.fastTimer);
  }

  async pollAll(): Promise<void> {
    await Promise.all(this.deps.registry.list().map((b) => this.probe(b.name)));
  }

  /**
   * Probes one backend now. Joins a probe already running for the same spec; after a reload
   * changed the spec, a new probe starts at once (the old one's answer is ignored).
   */
  probe(name: string): Promise<void> {
    const spec = this.deps.registry.get(name)?.spec;
    const running = this.inFlight.get(name);
    if (running && running.spec === spec) return running.done;
    const entry = { spec: spec!, done: Promise.resolve() };
    entry.done = this.runProbe(name).finally(() => {
      if (this.inFlight.get(name) === entry) this.inFlight.delete(name);
    });
    this.inFlight.set(name, entry);
    return entry.done;
  }

  private async probeUnhealthyWhileParked(): Promise<void> {
    if (!this.deps.hasParked()) return;
    await Promise.all(
      this.deps.registry
        .list()
        .filter((b) => b.spec.enabled && !b.healthy)
        .map((b) => this.probe(b.name)),
    );
  }

  private async runProbe(name: string): Promise<void> {
    const { registry } = this.deps;
    const backend = registry.get(name);
    if (!backend || !backend.spec.enabled) return;
    const spec = backend.spec;
    const startedAt = (this.deps.now ?? Date.now)();
    try {
      const models = await probeWithKeys(backend, registry, this.deps.now ?? Date.now, (keyed) =>
        probeBackend(keyed, this.deps.dispatcherFor(spec), this.deps.probeTimeoutMs ?? 5000, this.deps.comfy),
      );
      if (registry.get(name)?.spec !== spec) return; // reconfigured meanwhile
      const stable = keepCreatedStable(backend.models, models, (this.deps.now ?? Date.now)());
      const wasHealthy = backend.healthy;
      const sameList = JSON.stringify(backend.models) === JSON.stringify(stable);
      registry.discovered(name, stable);
      this.answered.add(name);
      if (!sameList) this.deps.saveModels?.(name, stable); // the store only hears of changes
      if (!wasHealthy) this.deps.log.info({ backend: name, models: stable.length }, 'backend is up');
      await this.readResidency(name, spec, stable, startedAt);
    } catch (err) {
      if (registry.get(name)?.spec !== spec) return;
      // a backend's answer may echo its key: redacted before it is logged or stored
      const error = redactBackendError(
        err instanceof ProbeError ? { kind: err.kind, status: err.status, detail: err.message } : describeError(err),
        spec,
      );
      if (backend.healthy || !backend.known) this.logDown(name, error);
      registry.markDown(name, error, this.deps.settings().healthCheckIntervalS * 1000);
      this.deps.onError?.(name, error);
    }
  }

  private logDown(name: string, error: Omit<BackendError, 'since'>): void {
    const quiet = !this.answered.has(name) && this.deps.isGuess?.(name) === true;
    if (quiet) this.deps.log.debug({ backend: name, error }, 'backend is down (not configured, never answered)');
    else this.deps.log.warn({ backend: name, error }, 'backend is down');
  }

  /** What a box holds loaded; a read that fails leaves the last one to age out (residency.ts). */
  private async readResidency(name: string, spec: BackendSpec, models: ModelInfo[], startedAt: number): Promise<void> {
    const residency = this.deps.residency;
    if (!residency) return;
    try {
      const reading = await residency.reader.read(spec, models, this.deps.dispatcherFor(spec));
      if (this.deps.registry.get(name)?.spec === spec) residency.tracker.observeProbe(name, reading, startedAt);
    } catch (err) {
      this.deps.log.debug({ backend: name, error: (err as Error).message }, 'could not read which models are loaded');
    }
  }
}

/** Gives models without their own `created` the time they were first seen, kept across polls. */
function keepCreatedStable(previous: ModelInfo[], current: ModelInfo[], nowMs: number): ModelInfo[] {
  const before = new Map(previous.map((m) => [m.id, m.created]));
  const firstSeen = Math.floor(nowMs / 1000);
  return current.map((m) => (m.created !== undefined ? m : { ...m, created: before.get(m.id) ?? firstSeen }));
}
