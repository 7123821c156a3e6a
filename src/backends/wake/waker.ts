/**
 * Wake-on-LAN for sleeping boxes. When every backend that could serve a call is down as
 * unreachable (connection refused, DNS, timeout) and some of them have `wake`, `wakeFor` sends
 * each of those its magic packet (at most once per `cooldown_s`, unless the box answered since
 * the last one: a box that woke and went back to sleep is a new need) and says how much longer
 * the call may park: until the end of the box's boot window (`boot_timeout_s` from its packet).
 * While a box is waking it is probed every few seconds through discovery, so a good probe marks
 * it up the ordinary way and the scheduler hands it the parked calls at once. A box that
 * answered after its packet is `awake`; with `idle_sleep`, once nothing has been in flight or
 * parked for it for `after_s`, the owner's URL is called, once per wake, in the background.
 *
 * One timer for all boxes, running only while a box is waking or awake with idle_sleep; it and
 * the sockets end with `close`.
 */
import { wakeSettings, type WakeSettings } from '../../config/wake-schema.ts';
import type { BackendRegistry, BackendState } from '../registry.ts';
import { magicPacket } from './packet.ts';
import { PacketSender, type SendPacket } from './send.ts';
import { SleepRequester } from './idle-sleep.ts';

/** How often the timer looks at waking and awake boxes. */
const TICK_MS = 1000;
/** How often a waking box is probed. */
export const WAKE_PROBE_MS = 2000;

export type WakePhase = 'idle' | 'waking' | 'awake' | 'failed' | 'sleep_requested';

/** What /health and /health/deep show of one backend with `wake`. */
export interface WakeStateView {
  /** idle: no packet sent (or the box went down after a wake); waking: packet sent, boot window open;
   * awake: it answered after its packet; failed: its boot window closed without an answer;
   * sleep_requested: idle_sleep's URL was called. */
  state: WakePhase;
  packet_sent_at: string | null;
  /** Seconds since the last packet. */
  since_s: number | null;
  packets_sent: number;
  /** When the boot window of the last packet ends (or ended). */
  boot_deadline_at: string | null;
  /** When the next packet may go (a cooldown while the box has not answered). */
  next_packet_at: string | null;
  woke_after_s: number | null;
  sleep_requested_at: string | null;
  last_error: string | null;
}

/** What a call parked for sleeping boxes is told (`Waker.wakeFor`). */
export interface WakePlan {
  /** The backends with `wake` among its candidates. */
  backends: string[];
  /** How long beyond its own park time it may wait (ms); 0 or less: no boot window is open. */
  extraMs: number;
  /** Seconds until a packet may go again, when no window is open. */
  retryAfterS: number;
}

interface Record_ {
  phase: WakePhase;
  packets: number;
  packetAt?: number;
  windowEnd?: number;
  answeredSincePacket: boolean;
  wokeAt?: number;
  idleSince?: number;
  sleepAt?: number;
  lastProbeAt?: number;
  lastError?: string;
}

export interface WakerDeps {
  registry: Pick<BackendRegistry, 'get' | 'list' | 'onVerdict'>;
  /** Probes the backend now (discovery's probe: a good answer marks it up). */
  probe: (backend: string) => void;
  /** Something is in flight or parked for the backend. */
  busy: (backend: string) => boolean;
  now: () => number;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** Where packets go (tests and the demo use the real sender too); default a PacketSender. */
  send?: SendPacket;
}

/** What the proxy uses of the waker (upstream/wake-wait.ts). */
export type WakeHook = Pick<Waker, 'wakeFor' | 'anyUp' | 'isWaking' | 'sinceS'>;

/** Down for a reason a sleeping box gives: no connection, or none in time. */
export function downAsleep(b: BackendState): boolean {
  return b.known && !b.healthy && (b.error?.kind === 'unreachable' || b.error?.kind === 'timeout');
}

export class Waker {
  private readonly records = new Map<string, Record_>();
  private readonly sender = new PacketSender();
  private readonly sleeper = new SleepRequester();
  private readonly send: SendPacket;
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly deps: WakerDeps) {
    this.send = deps.send ?? this.sender.send;
    deps.registry.onVerdict((name, verdict) => this.onVerdict(name, verdict.up));
  }

  /**
   * A call none of whose serving candidates (enabled, not draining) is up: when every one of them
   * is down asleep and some have `wake`, wakes those (within their cooldowns) and says how long
   * the call may wait for them; undefined when this is no case for waking.
   */
  wakeFor(backends: readonly string[]): WakePlan | undefined {
    if (this.closed) return undefined;
    const serving: BackendState[] = [];
    for (const name of new Set(backends)) {
      const b = this.deps.registry.get(name);
      if (b && b.spec.enabled && !b.draining) serving.push(b);
    }
    if (serving.length === 0 || !serving.every(downAsleep)) return undefined;
    const now = this.deps.now();
    const plan: WakePlan = { backends: [], extraMs: 0, retryAfterS: 0 };
    let windowEnd = -Infinity;
    let nextPacket = Infinity;
    for (const b of serving) {
      const settings = wakeSettings(b.spec);
      if (!settings) continue;
      plan.backends.push(b.name);
      const rec = this.wakeOne(b.name, settings, now);
      windowEnd = Math.max(windowEnd, rec.windowEnd ?? -Infinity);
      nextPacket = Math.min(nextPacket, (rec.packetAt ?? now) + settings.cooldownMs);
    }
    if (plan.backends.length === 0) return undefined;
    plan.extraMs = windowEnd - now;
    plan.retryAfterS = Math.max(1, Math.ceil((nextPacket - now) / 1000));
    return plan;
  }

  /** Whether any of `backends` is up now. */
  anyUp(backends: readonly string[]): boolean {
    return backends.some((name) => this.deps.registry.get(name)?.healthy === true);
  }

  /** Whether the backend's boot window is open now (a packet went and it has not answered). */
  isWaking(name: string): boolean {
    return this.records.get(name)?.phase === 'waking';
  }

  /** Seconds since the backend's last packet; undefined before one. */
  sinceS(name: string): number | undefined {
    const at = this.records.get(name)?.packetAt;
    return at === undefined ? undefined : Math.max(0, Math.round((this.deps.now() - at) / 1000));
  }

  /** One backend's wake state; null without `wake`. */
  stateOf(name: string): WakeStateView | null {
    const b = this.deps.registry.get(name);
    const settings = b && wakeSettings(b.spec);
    if (!settings) return null;
    const rec = this.records.get(name);
    const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
    const cooling = rec?.packetAt !== undefined && !rec.answeredSincePacket;
    return {
      state: rec?.phase ?? 'idle',
      packet_sent_at: iso(rec?.packetAt),
      since_s: this.sinceS(name) ?? null,
      packets_sent: rec?.packets ?? 0,
      boot_deadline_at: iso(rec?.windowEnd),
      next_packet_at: cooling ? iso(rec.packetAt! + settings.cooldownMs) : null,
      woke_after_s:
        rec?.wokeAt !== undefined && rec.packetAt !== undefined
          ? Math.round((rec.wokeAt - rec.packetAt) / 100) / 10
          : null,
      sleep_requested_at: iso(rec?.sleepAt),
      last_error: rec?.lastError ?? null,
    };
  }

  /** Every backend with `wake` and its state, by name (for /health/deep). */
  wakeStates(): Record<string, WakeStateView> {
    const out: Record<string, WakeStateView> = {};
    for (const { name } of this.deps.registry.list()) {
      const view = this.stateOf(name);
      if (view) out[name] = view;
    }
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    this.sender.close();
    await this.sleeper.close();
  }

  /** Sends the packet unless its window is open or its cooldown runs; returns the record. */
  private wakeOne(name: string, settings: WakeSettings, now: number): Record_ {
    let rec = this.records.get(name);
    if (!rec) this.records.set(name, (rec = { phase: 'idle', packets: 0, answeredSincePacket: false }));
    if (rec.phase === 'waking' && rec.windowEnd !== undefined && now < rec.windowEnd) return rec;
    const cooled = rec.packetAt === undefined || rec.answeredSincePacket || now - rec.packetAt >= settings.cooldownMs;
    if (!cooled) return rec;
    rec.phase = 'waking';
    rec.packets++;
    rec.packetAt = now;
    rec.windowEnd = now + settings.bootTimeoutMs;
    rec.answeredSincePacket = false;
    rec.wokeAt = undefined;
    rec.sleepAt = undefined;
    rec.lastProbeAt = now;
    rec.lastError = undefined;
    const target = { backend: name, address: settings.address, port: settings.port };
    this.send(magicPacket(settings.mac), settings.address, settings.port).then(
      () => this.deps.log.info(target, 'Wake-on-LAN packet sent'),
      (err: Error) => {
        rec.lastError = err.message;
        this.deps.log.warn({ ...target, error: err.message }, 'Wake-on-LAN packet could not be sent');
      },
    );
    this.arm();
    return rec;
  }

  private onVerdict(name: string, up: boolean): void {
    const rec = this.records.get(name);
    if (!rec) return;
    const now = this.deps.now();
    if (up && (rec.phase === 'waking' || rec.phase === 'failed')) {
      rec.phase = 'awake';
      rec.answeredSincePacket = true;
      rec.wokeAt = now;
      rec.idleSince = now;
      const afterS = rec.packetAt === undefined ? undefined : (now - rec.packetAt) / 1000;
      this.deps.log.info({ backend: name, after_s: afterS }, 'backend woke up');
      this.arm();
    } else if (up) {
      rec.answeredSincePacket = true;
    } else if (rec.phase === 'awake') {
      rec.phase = 'idle';
    }
  }

  private arm(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
  }

  /** Probes waking boxes, closes boot windows, asks idle woken boxes to sleep; stops when nothing is left. */
  private tick(): void {
    const now = this.deps.now();
    let needed = false;
    for (const [name, rec] of this.records) {
      const b = this.deps.registry.get(name);
      const settings = b && wakeSettings(b.spec);
      if (!b || !settings) {
        this.records.delete(name);
        continue;
      }
      if (rec.phase === 'waking') needed = this.tickWaking(name, rec, b, now) || needed;
      else if (rec.phase === 'awake' && settings.idleSleep) needed = this.tickAwake(name, rec, settings, now) || needed;
    }
    if (!needed) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private tickWaking(name: string, rec: Record_, b: BackendState, now: number): boolean {
    if (now >= rec.windowEnd!) {
      rec.phase = 'failed';
      const bootS = Math.round((rec.windowEnd! - rec.packetAt!) / 1000);
      this.deps.log.warn({ backend: name, boot_timeout_s: bootS }, 'backend did not wake in time');
      return false;
    }
    if (!b.healthy && now - (rec.lastProbeAt ?? 0) >= WAKE_PROBE_MS) {
      rec.lastProbeAt = now;
      this.deps.probe(name);
    }
    return true;
  }

  private tickAwake(name: string, rec: Record_, settings: WakeSettings, now: number): boolean {
    const sleep = settings.idleSleep!;
    // idle from the first tick that finds it idle (never from the last busy one: up to a tick early)
    if (this.deps.busy(name)) {
      rec.idleSince = undefined;
      return true;
    }
    rec.idleSince ??= now;
    if (now - rec.idleSince < sleep.afterMs) return true;
    rec.phase = 'sleep_requested';
    rec.sleepAt = now;
    this.deps.log.info({ backend: name, idle_s: (now - rec.idleSince!) / 1000 }, 'asking an idle woken box to sleep');
    void this.sleeper.request(sleep.url, sleep.method).then((outcome) => {
      if (outcome.ok) return;
      rec.lastError = `idle_sleep: ${outcome.error}`;
      this.deps.log.warn({ backend: name, error: outcome.error }, 'idle_sleep request failed');
    });
    return false;
  }
}
