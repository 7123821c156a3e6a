import type { BackendSpec } from '../config/types.ts';
import type { BackendError, ModelInfo } from './types.ts';
import { redactBackendError } from './secret-scrub.ts';
import { kindOf } from './kinds/index.ts';
import { basePath } from './pools.ts';
import { KeyPool, type KeyStateView, type MuteReason } from './key-pool.ts';

/** One backend as the gateway currently knows it: its spec plus live state. */
export interface BackendState {
  readonly name: string;
  spec: BackendSpec;
  /** Path prefix of the spec's URL ('' or e.g. '/api'), prepended to every upstream path. */
  basePath: string;
  /** Effective in-flight cap (spec's, else the global default); 0 = unlimited. */
  cap: number;
  healthy: boolean;
  /** Set once the first discovery poll (or the model cache) has spoken. */
  known: boolean;
  error?: BackendError;
  models: ModelInfo[];
  modelsById: ReadonlyMap<string, ModelInfo>;
  discoveredAt?: number;
  consecutiveFailures: number;
  /** Runtime only (never stored): no new work goes here while in-flight calls and jobs finish. */
  draining?: boolean;
  /** Unix ms when draining began (set with `draining`), for refusals that say since when. */
  drainingSince?: number;
  /** Unix ms of the last health check's verdict (up or down). */
  checkedAt?: number;
  /** While down after a failed health check: when the next regular check is due (unix ms), at the latest. */
  nextCheckAt?: number;
  /** The last error seen (kept after recovery, for /health/deep), with when it was last seen (unix ms). */
  lastError?: BackendError & { at: number };
  /** Failed calls or probes counted since start (`recordFailure`), and times the backend went down. */
  failuresTotal?: number;
  timesDown?: number;
  /** The pool of `api_keys` (absent without one: a plain `api_key` costs nothing here). */
  keys?: KeyPool;
  /** Out of rotation until then: a sole key rate-limited, or every key of the pool muted. */
  resting?: { until: number; reason: MuteReason };
  /** A sole key's 429s in a row (its backoff's exponent). */
  restStrikes?: number;
}

/** A key of a backend was refused by the upstream (401/403), or rate-limited (429): for the alerts. */
export interface KeyRejection {
  backend: string;
  key_hint: string;
  status: MuteReason;
}

export interface RegistryChange {
  added: string[];
  removed: string[];
  changed: string[];
}

type Listener = (name: string) => void;

/** A health check's or a call's verdict on a backend: up, or down for a kind of error. */
export interface Verdict {
  up: boolean;
  error?: BackendError;
}

/**
 * A backend's verdict changed (up ↔ down, or down for another kind of error). `before` is
 * undefined for the first verdict after it joined the fleet or its URL or key changed (the
 * first discovery), which is no transition.
 */
export type VerdictListener = (name: string, now: Verdict, before: Verdict | undefined) => void;

/**
 * The registry of backends and their live state. It knows nothing about HTTP: discovery and
 * the request path report into it; routing and the scheduler read from it. Every state change
 * notifies `onChange` listeners (the scheduler adapter, the model index).
 */
export class BackendRegistry {
  private readonly backends = new Map<string, BackendState>();
  private readonly listeners: Listener[] = [];
  private readonly removedListeners: Listener[] = [];
  private readonly modelsListeners: Listener[] = [];
  private readonly verdictListeners: VerdictListener[] = [];
  /** The last verdict per backend (a seeded model list is none). */
  private readonly verdicts = new Map<string, Verdict>();
  private modelIndex?: Map<string, string[]>;
  private readonly keyListeners: ((event: KeyRejection) => void)[] = [];
  /** The timer that ends each resting backend's rest. */
  private readonly restTimers = new Map<string, NodeJS.Timeout>();

  /** `now`: the clock its times (error since, checks, draining) are read from. */
  constructor(readonly now: () => number = Date.now) {}

  onChange(fn: Listener): void {
    this.listeners.push(fn);
  }

  onRemoved(fn: Listener): void {
    this.removedListeners.push(fn);
  }

  /** Fires after `onChange` listeners when a backend's set of model ids changed. */
  onModelsChanged(fn: Listener): void {
    this.modelsListeners.push(fn);
  }

  /** Fires when a backend's verdict changes (see `VerdictListener`); repeats of the same one do not. */
  onVerdict(fn: VerdictListener): void {
    this.verdictListeners.push(fn);
  }

  /** Fires when an upstream refuses a pooled key (401/403, for `credential_rejected`) or rate-limits it (429). */
  onKeyRejected(fn: (event: KeyRejection) => void): void {
    this.keyListeners.push(fn);
  }

  keyRejected(event: KeyRejection): void {
    for (const fn of this.keyListeners) fn(event);
  }

  /** Each key's state of a pooled backend, masked; undefined without a pool (or an unknown backend). */
  keyStates(name: string): KeyStateView[] | undefined {
    return this.backends.get(name)?.keys?.states(this.now());
  }

  /**
   * Takes `name` out of rotation until `until` (the scheduler skips it like a down backend), then
   * puts it back and tells the listeners (the scheduler's hand-off runs again for parked calls).
   */
  rest(name: string, until: number, reason: MuteReason): void {
    const b = this.backends.get(name);
    if (!b) return;
    this.endRest(name, false);
    const ms = until - this.now();
    if (ms <= 0) return this.emit(name);
    b.resting = { until, reason };
    const timer = setTimeout(() => this.endRest(name, true), ms);
    timer.unref();
    this.restTimers.set(name, timer);
    this.emit(name);
  }

  /** Stops every rest timer (the gateway's close). */
  close(): void {
    for (const name of [...this.restTimers.keys()]) this.endRest(name, false);
  }

  private endRest(name: string, tell: boolean): void {
    clearTimeout(this.restTimers.get(name));
    this.restTimers.delete(name);
    const b = this.backends.get(name);
    if (!b?.resting) return;
    b.resting = undefined;
    if (tell) this.emit(name);
  }

  get(name: string): BackendState | undefined {
    return this.backends.get(name);
  }

  list(): BackendState[] {
    return [...this.backends.values()];
  }

  /** Brings the registry in line with a new list of specs; live state of kept backends survives. */
  reconcile(specs: BackendSpec[], globalCap: number): RegistryChange {
    const change: RegistryChange = { added: [], removed: [], changed: [] };
    const wanted = new Map(specs.map((s) => [s.name, s]));
    for (const name of [...this.backends.keys()]) {
      if (!wanted.has(name)) {
        this.endRest(name, false);
        this.backends.delete(name);
        this.verdicts.delete(name);
        change.removed.push(name);
      }
    }
    for (const spec of specs) {
      // a ComfyUI box runs one prompt at a time: more in flight would only queue on it, invisible to the scheduler
      const cap = spec.max_concurrent ?? kindOf(spec).defaults.max_concurrent ?? globalCap;
      const existing = this.backends.get(spec.name);
      if (!existing) {
        this.backends.set(spec.name, {
          name: spec.name,
          spec,
          basePath: basePath(spec.url),
          cap,
          healthy: false,
          known: false,
          models: [],
          modelsById: new Map(),
          consecutiveFailures: 0,
          ...(spec.api_keys ? { keys: new KeyPool(spec.api_keys) } : {}),
        });
        change.added.push(spec.name);
      } else if (JSON.stringify(existing.spec) !== JSON.stringify(spec) || existing.cap !== cap) {
        const keysChanged = JSON.stringify(existing.spec.api_keys) !== JSON.stringify(spec.api_keys);
        const urlChanged = existing.spec.url !== spec.url || existing.spec.api_key !== spec.api_key || keysChanged;
        existing.spec = spec;
        existing.keys = spec.api_keys ? new KeyPool(spec.api_keys, existing.keys) : undefined;
        if (urlChanged) {
          // another address or key: the rest and the backoff of the old one do not apply
          this.endRest(spec.name, false);
          existing.restStrikes = undefined;
        }
        existing.basePath = basePath(spec.url);
        existing.cap = cap;
        if (urlChanged) {
          existing.healthy = false;
          existing.known = false;
          this.verdicts.delete(spec.name);
        }
        change.changed.push(spec.name);
      }
    }
    this.modelIndex = undefined;
    for (const name of change.removed) for (const fn of this.removedListeners) fn(name);
    for (const name of [...change.added, ...change.changed]) this.emit(name);
    return change;
  }

  /** Starts or ends draining `name` (kept across reconciles, lost on restart); false when unknown. */
  setDraining(name: string, on: boolean): boolean {
    const b = this.backends.get(name);
    if (!b) return false;
    if (!!b.draining !== on) {
      b.draining = on;
      b.drainingSince = on ? this.now() : undefined;
      this.emit(name);
    }
    return true;
  }

  /** Seeds a backend's models from the store's cache so a restart routes before the first poll. */
  seedModels(name: string, models: ModelInfo[]): void {
    const b = this.backends.get(name);
    if (!b || b.known) return;
    const changed = this.setModelList(b, models);
    b.healthy = true;
    b.known = true;
    this.emit(name, changed);
  }

  /** A successful discovery poll. */
  discovered(name: string, models: ModelInfo[]): void {
    const b = this.backends.get(name);
    if (!b) return;
    const changed = this.setModelList(b, models);
    b.discoveredAt = this.now();
    b.checkedAt = b.discoveredAt;
    b.nextCheckAt = undefined;
    b.known = true;
    b.healthy = true;
    b.error = undefined;
    b.consecutiveFailures = 0;
    this.emit(name, changed);
    this.judge(name, { up: true });
  }

  /**
   * A failed poll, or a call whose credential the backend refused: down, but the model list is
   * kept. The error remembers why (kind, status) and since when (kept while the kind repeats),
   * so a refusal can say it. From a health check, `nextCheckInMs` says when the next one is due.
   */
  markDown(name: string, error: Omit<BackendError, 'since'>, nextCheckInMs?: number): void {
    const b = this.backends.get(name);
    if (!b) return;
    const now = this.now();
    const since = b.error && b.error.kind === error.kind && !b.healthy ? b.error.since : now;
    if (nextCheckInMs !== undefined) {
      b.checkedAt = now;
      b.nextCheckAt = now + nextCheckInMs;
    }
    b.error = { ...redactBackendError(error, b.spec), since };
    b.lastError = { ...b.error, at: now };
    if (b.healthy || !b.known) b.timesDown = (b.timesDown ?? 0) + 1;
    b.known = true;
    b.healthy = false;
    this.emit(name);
    this.judge(name, { up: false, error: b.error });
  }

  /**
   * A forwarding failure (connect error, timeout, stall, 5xx). Returns true when the backend
   * has now failed `threshold` times in a row: the caller then asks for a health probe, and
   * only a failed probe marks it down (one client's odd prompt does not take a healthy
   * backend out). A successful probe or call starts the count again.
   */
  recordFailure(name: string, threshold: number): boolean {
    const b = this.backends.get(name);
    if (!b) return false;
    b.consecutiveFailures++;
    b.failuresTotal = (b.failuresTotal ?? 0) + 1;
    return b.healthy && threshold > 0 && b.consecutiveFailures >= threshold;
  }

  recordSuccess(name: string): void {
    const b = this.backends.get(name);
    if (b) b.consecutiveFailures = 0;
  }

  /** Backend names that list `modelId`, healthy or not (routing decides what to do with them). */
  backendsServing(modelId: string): readonly string[] {
    if (!this.modelIndex) this.modelIndex = this.buildModelIndex();
    return this.modelIndex.get(modelId) ?? [];
  }

  private buildModelIndex(): Map<string, string[]> {
    const index = new Map<string, string[]>();
    for (const b of this.backends.values()) {
      for (const id of b.modelsById.keys()) {
        const list = index.get(id);
        if (list) list.push(b.name);
        else index.set(id, [b.name]);
      }
    }
    return index;
  }

  /** Replaces a backend's model list; true when the set of ids changed. */
  private setModelList(b: BackendState, models: ModelInfo[]): boolean {
    const before = b.modelsById;
    b.models = models;
    b.modelsById = new Map(models.map((m) => [m.id, m]));
    const changed = before.size !== b.modelsById.size || [...b.modelsById.keys()].some((id) => !before.has(id));
    if (changed) this.modelIndex = undefined;
    return changed;
  }

  private judge(name: string, verdict: Verdict): void {
    const before = this.verdicts.get(name);
    this.verdicts.set(name, verdict);
    if (before && before.up === verdict.up && before.error?.kind === verdict.error?.kind) return;
    for (const fn of this.verdictListeners) fn(name, verdict, before);
  }

  private emit(name: string, modelsChanged = false): void {
    for (const fn of this.listeners) fn(name);
    if (modelsChanged) for (const fn of this.modelsListeners) fn(name);
  }
}
