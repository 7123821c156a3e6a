/**
 * Residency: which models each box holds loaded now. Pure state, no I/O: probes report what the
 * box said (residency-read.ts reads it), the request path reports the calls the gateway sent,
 * and readers ask `isResident`. Three kinds of box:
 * - `swap` (llama-swap, Ollama, LM Studio): holds up to `capacity` models; a call for another
 *   model loads it and evicts the least recently used one beyond capacity;
 * - `all-listed` (vLLM, llama.cpp): every listed model is loaded, calls change nothing;
 * - `unknown`: the box cannot tell (nor can calls: nothing is guessed).
 * A box whose last good read is older than the TTL is unknown too: a box that stops answering
 * its probes is never kept "warm" on old news.
 */

import { DEFAULT_RESIDENT } from '../config/defaults.ts';

export type ResidencyKind = 'llama-swap' | 'ollama' | 'lmstudio' | 'vllm' | 'llama.cpp' | 'unknown';
export type ResidencyMode = 'swap' | 'all-listed' | 'unknown';
export type ResidencySource = 'probe' | 'call';

/** What one probe of a box said about its loaded models. */
export interface ResidencyReading {
  kind: ResidencyKind;
  mode: ResidencyMode;
  /** Models loaded (or loading) now; empty when `mode` is unknown. */
  loaded: string[];
}

export interface ResidentModel {
  model: string;
  source: ResidencySource;
  /** Unix ms it became resident, as far as the gateway knows. */
  since: number;
}

/** One box's residency, for /health and for the scheduler's score. */
export interface BackendResidency {
  kind: ResidencyKind;
  mode: ResidencyMode;
  /** False when the box cannot tell, was never read, or its last good read is older than the TTL. */
  known: boolean;
  /** How many models it holds at once (swap boxes; all-listed: the number listed). */
  capacity: number;
  /** Unix ms of the last good read, if any. */
  readAt: number | null;
  /** Most recently used first; empty when not known. */
  models: ResidentModel[];
}

interface Entry extends ResidentModel {
  lastUsed: number;
}

interface Box {
  kind: ResidencyKind;
  mode: ResidencyMode;
  readAt?: number;
  /** The most models a probe has seen loaded at once. */
  seenAtOnce: number;
  entries: Map<string, Entry>;
}

export interface ResidencyOptions {
  /** The backend's configured `resident` (undefined: DEFAULT_RESIDENT). Read on every use: hot. */
  residentOf: (backend: string) => number | undefined;
  /** How long a good read stays good without another (ms). */
  ttlMs: () => number;
}

export class ResidencyTracker {
  private readonly boxes = new Map<string, Box>();

  constructor(private readonly opts: ResidencyOptions) {}

  /**
   * A good read of `backend`, taken by a probe sent at `at`. Models it lists are resident
   * (keeping their `since`); ones a call made resident after `at` stay, the box not having
   * seen that call yet; the rest are gone.
   */
  observeProbe(backend: string, reading: ResidencyReading, at: number): void {
    const before = this.boxes.get(backend);
    const entries = new Map<string, Entry>();
    if (reading.mode !== 'unknown') {
      for (const model of reading.loaded) {
        const old = before?.entries.get(model);
        entries.set(model, { model, source: 'probe', since: old?.since ?? at, lastUsed: old?.lastUsed ?? at });
      }
    }
    const box: Box = {
      kind: reading.kind,
      mode: reading.mode,
      readAt: at,
      entries,
      seenAtOnce: Math.max(before?.kind === reading.kind ? before.seenAtOnce : 0, entries.size),
    };
    this.boxes.set(backend, box);
    if (reading.mode !== 'swap' || !before) return;
    for (const entry of before.entries.values()) {
      if (entry.source === 'call' && entry.since > at && !entries.has(entry.model)) entries.set(entry.model, entry);
    }
    this.evictBeyondCapacity(backend, box);
  }

  /**
   * The gateway sent a call for `model` to `backend` at `at`. Returns whether the box held the
   * model just before (`isResident` then): false = this call has to load it.
   */
  observeCall(backend: string, model: string, at: number): boolean | undefined {
    const wasResident = this.isResident(backend, model, at);
    const box = this.boxes.get(backend);
    if (!box || box.mode !== 'swap') return wasResident;
    const entry = box.entries.get(model);
    if (entry) {
      entry.lastUsed = at;
      return wasResident;
    }
    box.entries.set(model, { model, source: 'call', since: at, lastUsed: at });
    this.evictBeyondCapacity(backend, box);
    return wasResident;
  }

  /** Unix ms `model` became resident on `backend` as far as the gateway knows (kept across probes). */
  residentSince(backend: string, model: string): number | undefined {
    return this.boxes.get(backend)?.entries.get(model)?.since;
  }

  /** True / false when known, undefined when the box cannot tell or its news is too old. */
  isResident(backend: string, model: string, at: number): boolean | undefined {
    const box = this.boxes.get(backend);
    if (!box || !this.isKnown(box, at)) return undefined;
    return box.entries.has(model);
  }

  /** How many models `backend` holds at once: max(configured `resident` or 1, most seen loaded at once). */
  capacity(backend: string): number {
    const box = this.boxes.get(backend);
    if (box?.mode === 'all-listed') return box.entries.size;
    return Math.max(this.opts.residentOf(backend) ?? DEFAULT_RESIDENT, box?.seenAtOnce ?? 0, 1);
  }

  forget(backend: string): void {
    this.boxes.delete(backend);
  }

  view(backend: string, at: number): BackendResidency | undefined {
    const box = this.boxes.get(backend);
    if (!box) return undefined;
    const known = this.isKnown(box, at);
    const models = known
      ? [...box.entries.values()]
          .sort((a, b) => b.lastUsed - a.lastUsed)
          .map(({ model, source, since }) => ({ model, source, since }))
      : [];
    const capacity = this.capacity(backend);
    return { kind: box.kind, mode: box.mode, known, capacity, readAt: box.readAt ?? null, models };
  }

  snapshot(at: number): Record<string, BackendResidency> {
    return Object.fromEntries([...this.boxes.keys()].map((name) => [name, this.view(name, at)!]));
  }

  private isKnown(box: Box, at: number): boolean {
    return box.mode !== 'unknown' && box.readAt !== undefined && at - box.readAt <= this.opts.ttlMs();
  }

  private evictBeyondCapacity(backend: string, box: Box): void {
    const cap = this.capacity(backend);
    while (box.entries.size > cap) {
      let oldest: Entry | undefined;
      for (const e of box.entries.values()) if (!oldest || e.lastUsed < oldest.lastUsed) oldest = e;
      box.entries.delete(oldest!.model);
    }
  }
}
