/**
 * The health of ComfyUI backends, beyond "it answers": every probe reads `/queue` for the
 * executor watchdog (a box whose executor died still accepts prompts — marked down with
 * `exec_stuck`), and the box's `/object_info` is read on the first good probe and again every
 * `OBJECT_INFO_EVERY` probes (the dump is large and slow to build on the box); the raw dump
 * (for the compiler) and the inventory drawn from it are kept while the box is down. A stuck
 * box with `auto_restart` is rebooted through ComfyUI-Manager, at most once per
 * `restart_cooldown_s`. Every request carries the backend's credential (`headers`, from
 * `credentialHeaders(spec)`: the probe passes it, so this module needs nothing of probe.ts).
 */
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import { comfyKnobs } from '../../config/defaults.ts';
import type { BackendSpec } from '../../config/types.ts';
import type { ObjectInfo } from '../compiler/index.ts';
import { requestManagerReboot, type RebootOutcome } from './restart.ts';
import { inventoryOf, type MediaInventory } from '../compiler/inventory.ts';
import { ExecutorWatchdog, queueView } from './watchdog.ts';
import { ExecutorStuck, type MediaHealthCheck } from '../../backends/media-health.ts';

/** Probes between two reads of /object_info (at the default 30 s poll: every 5 minutes). */
export const OBJECT_INFO_EVERY = 10;

/** A stuck executor, for the probe to report (the backend goes down with kind exec_stuck). */

export interface ComfyHealthOptions {
  now?: () => number;
  /** Where auto restarts are logged. */
  log?: Pick<Logger, 'info' | 'warn'>;
}

/** The last auto restart asked of a backend. */
export interface RestartAttempt {
  at: number;
  /** Settles with the outcome (never rejects). */
  done: Promise<RebootOutcome>;
  outcome?: RebootOutcome;
}

export class ComfyHealth implements MediaHealthCheck {
  private readonly watchdogs = new Map<string, { stuckAfterMs: number; dog: ExecutorWatchdog }>();
  private readonly inventories = new Map<string, { info: ObjectInfo; inventory: MediaInventory }>();
  private readonly probes = new Map<string, number>();
  private readonly restarts = new Map<string, RestartAttempt>();
  private readonly now: () => number;
  private readonly log?: Pick<Logger, 'info' | 'warn'>;

  constructor(opts: ComfyHealthOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.log = opts.log;
  }

  /** The last inventory read from the backend (kept while it is down). */
  inventory(backend: string): MediaInventory | undefined {
    return this.inventories.get(backend)?.inventory;
  }

  /** The last `/object_info` read from the backend, as it answered (kept while it is down). */
  objectInfo(backend: string): ObjectInfo | undefined {
    return this.inventories.get(backend)?.info;
  }

  /** The last auto restart asked of the backend, if any. */
  lastRestart(backend: string): RestartAttempt | undefined {
    return this.restarts.get(backend);
  }

  /**
   * After `/system_stats` answered: the queue and, now and then, the inventory. Throws
   * ExecutorStuck. `headers`: the backend's credential, sent with every request.
   */
  async check(
    spec: BackendSpec,
    base: string,
    dispatcher: Dispatcher,
    timeoutMs: number,
    headers: Record<string, string> = {},
  ): Promise<void> {
    const count = (this.probes.get(spec.name) ?? 0) + 1;
    this.probes.set(spec.name, count);
    if (!this.inventories.has(spec.name) || count % OBJECT_INFO_EVERY === 0) {
      const info = await getJson(`${base}/object_info`, dispatcher, timeoutMs, headers);
      this.inventories.set(spec.name, { inventory: inventoryOf(info), info: info as ObjectInfo });
    }
    const knobs = comfyKnobs(spec);
    let watch = this.watchdogs.get(spec.name);
    if (!watch || watch.stuckAfterMs !== knobs.stuckAfterMs) {
      watch = { stuckAfterMs: knobs.stuckAfterMs, dog: new ExecutorWatchdog(knobs.stuckAfterMs) };
      this.watchdogs.set(spec.name, watch);
    }
    const queue = queueView(await getJson(`${base}/queue`, dispatcher, timeoutMs, headers));
    if (watch.dog.observe(queue, this.now())) {
      const restart = knobs.autoRestart
        ? this.autoRestart(spec.name, knobs.restartCooldownMs, base, dispatcher, timeoutMs, headers)
        : '';
      throw new ExecutorStuck(
        `exec_stuck: prompt ${queue.pending[0]} has waited at the head of the queue with nothing ` +
          `running for ${knobs.stuckAfterMs / 1000} s or more${restart}`,
      );
    }
  }

  /** A backend left the configuration. */
  forget(backend: string): void {
    this.watchdogs.delete(backend);
    this.inventories.delete(backend);
    this.probes.delete(backend);
    this.restarts.delete(backend);
  }

  /** Starts a reboot unless one was asked within the cooldown; says which, for the exec_stuck detail. */
  private autoRestart(
    name: string,
    cooldownMs: number,
    base: string,
    dispatcher: Dispatcher,
    timeoutMs: number,
    headers: Record<string, string>,
  ): string {
    const now = this.now();
    const last = this.restarts.get(name);
    if (last && now - last.at < cooldownMs) {
      return (
        `; auto_restart: a reboot was asked ${Math.round((now - last.at) / 1000)} s ago, the next ` +
        `is allowed in ${Math.ceil((last.at + cooldownMs - now) / 1000)} s`
      );
    }
    this.log?.warn(
      { backend: name },
      `ComfyUI ${name}: executor stuck; asking ComfyUI-Manager to reboot it (auto_restart)`,
    );
    const attempt: RestartAttempt = {
      at: now,
      done: requestManagerReboot(base, dispatcher, timeoutMs, headers).then((outcome) => {
        attempt.outcome = outcome;
        if (outcome.ok)
          this.log?.info(
            { backend: name, route: outcome.route },
            `ComfyUI ${name}: reboot accepted (${outcome.route}: ${outcome.detail})`,
          );
        else
          this.log?.warn({ backend: name, route: outcome.route }, `ComfyUI ${name}: reboot failed: ${outcome.detail}`);
        return outcome;
      }),
    };
    this.restarts.set(name, attempt);
    return '; auto_restart: reboot requested through ComfyUI-Manager';
  }
}

async function getJson(
  url: string,
  dispatcher: Dispatcher,
  timeoutMs: number,
  headers: Record<string, string>,
): Promise<unknown> {
  const res = await request(url, {
    method: 'GET',
    dispatcher,
    headers: { ...headers, accept: 'application/json' },
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200)
    throw new Error(`GET ${new URL(url).pathname} answered ${res.statusCode}: ${text.slice(0, 200)}`);
  return JSON.parse(text) as unknown;
}
