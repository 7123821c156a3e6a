/**
 * The health of ComfyUI backends, beyond "it answers": every probe reads `/queue` for the
 * executor watchdog (a box whose executor died still accepts prompts — marked down with
 * `exec_stuck`), and the box's inventory is read from `/object_info` on the first good probe
 * and again every `OBJECT_INFO_EVERY` probes (the dump is large and slow to build on the box),
 * kept while the box is down.
 */
import { request, type Dispatcher } from 'undici';
import type { BackendSpec } from '../config/types.ts';
import { inventoryOf, type MediaInventory } from './inventory.ts';
import { ExecutorWatchdog, queueView } from './watchdog.ts';

/** Probes between two reads of /object_info (at the default 30 s poll: every 5 minutes). */
export const OBJECT_INFO_EVERY = 10;
const DEFAULT_STUCK_AFTER_S = 90;

/** A stuck executor, for the probe to report (the backend goes down with kind exec_stuck). */
export class ExecutorStuck extends Error {}

export class ComfyHealth {
  private readonly watchdogs = new Map<string, { stuckAfterS: number; dog: ExecutorWatchdog }>();
  private readonly inventories = new Map<string, MediaInventory>();
  private readonly probes = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The last inventory read from the backend (kept while it is down). */
  inventory(backend: string): MediaInventory | undefined {
    return this.inventories.get(backend);
  }

  /** After `/system_stats` answered: the queue and, now and then, the inventory. Throws ExecutorStuck. */
  async check(spec: BackendSpec, base: string, dispatcher: Dispatcher, timeoutMs: number): Promise<void> {
    const count = (this.probes.get(spec.name) ?? 0) + 1;
    this.probes.set(spec.name, count);
    if (!this.inventories.has(spec.name) || count % OBJECT_INFO_EVERY === 0) {
      this.inventories.set(spec.name, inventoryOf(await getJson(`${base}/object_info`, dispatcher, timeoutMs)));
    }
    const stuckAfterS = spec.stuck_after_s ?? DEFAULT_STUCK_AFTER_S;
    let watch = this.watchdogs.get(spec.name);
    if (!watch || watch.stuckAfterS !== stuckAfterS) {
      watch = { stuckAfterS, dog: new ExecutorWatchdog(stuckAfterS * 1000) };
      this.watchdogs.set(spec.name, watch);
    }
    const queue = queueView(await getJson(`${base}/queue`, dispatcher, timeoutMs));
    if (watch.dog.observe(queue, this.now())) {
      throw new ExecutorStuck(`exec_stuck: prompt ${queue.pending[0]} has waited at the head of the queue with nothing running for ${stuckAfterS} s or more`);
    }
  }

  /** A backend left the configuration. */
  forget(backend: string): void {
    this.watchdogs.delete(backend);
    this.inventories.delete(backend);
    this.probes.delete(backend);
  }
}

async function getJson(url: string, dispatcher: Dispatcher, timeoutMs: number): Promise<unknown> {
  const res = await request(url, { method: 'GET', dispatcher, headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`GET ${new URL(url).pathname} answered ${res.statusCode}: ${text.slice(0, 200)}`);
  return JSON.parse(text) as unknown;
}
