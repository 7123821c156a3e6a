/**
 * The alerts: events raised anywhere in the gateway, each sent to every target that takes it,
 * in that target's format, in the background. `emit` only queues (after the target's dedupe)
 * and returns; the queue is drained on a later turn of the event loop, a few POSTs at a time. A
 * failed POST is logged (the URL masked) and retried after growing delays, a bounded number of
 * times; the queue is bounded too (past it, new alerts are dropped and that is logged). The
 * targets are read from the config in force at each event (a reload applies at once; an
 * unchanged target keeps its dedupe memory). `close` stops every timer and abandons what is in
 * flight within a deadline.
 */
import { hostname } from 'node:os';
import type { AlertEventName, AlertTargetSpec } from '../config/types.ts';
import { AlertDedupe } from './dedupe.ts';
import type { AlertEvent } from './events.ts';
import { renderAlert } from './format.ts';
import { maskAlertUrl } from './mask.ts';
import { AlertSender, type SendOutcome } from './send.ts';

export type { AlertEvent } from './events.ts';
export type { SendOutcome } from './send.ts';

interface AlertLog {
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface AlertsDeps {
  /** `alerts` of the config in force, read at each event. */
  targets: () => readonly AlertTargetSpec[];
  log: AlertLog;
  /** The name alerts carry (default: this machine's host name). */
  gateway?: string;
  /** One POST's deadline, ms (default 10 s). */
  timeoutMs?: number;
  /** Delays before each retry of a failed POST, ms; their count bounds the retries. */
  retryDelaysMs?: readonly number[];
  /** Deliveries waiting (queued or for a retry) at most; default 200. */
  maxWaiting?: number;
  now?: () => number;
}

/** A target as the console and the admin API show it: the URL masked, never in full. */
export interface AlertTargetView {
  index: number;
  url: string;
  format: AlertTargetSpec['format'];
  /** The events it takes; 'all' when the target names none. */
  events: readonly AlertEventName[] | 'all';
  min_interval_s: number;
  /** The last POST to it: when, and how it went. */
  last?: SendOutcome & { at: number; event: string };
}

export interface AlertTestResult extends SendOutcome {
  target: AlertTargetView;
}

interface Target {
  spec: AlertTargetSpec;
  masked: string;
  events?: ReadonlySet<string>;
  dedupe: AlertDedupe;
  last?: AlertTargetView['last'];
}

interface Delivery {
  target: Target;
  event: AlertEvent;
  /** Attempts made so far. */
  attempt: number;
}

const DEFAULT_RETRY_DELAYS_MS = [2_000, 15_000, 60_000];
/** POSTs in flight at once, every target together. */
const MAX_INFLIGHT = 4;
/** close(): how long the abandoned sends may take to let go. */
const CLOSE_DEADLINE_MS = 2_000;
const NO_TARGETS: readonly AlertTargetSpec[] = Object.freeze([]);
/** setTimeout's longest delay; a later flush is re-armed when this one fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class Alerts {
  private readonly sender: AlertSender;
  private readonly now: () => number;
  private readonly gateway: string;
  private readonly retryDelays: readonly number[];
  private readonly maxWaiting: number;
  private specs: readonly AlertTargetSpec[] | undefined;
  private compiled: Target[] = [];
  private readonly queue: Delivery[] = [];
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private drainSoon?: NodeJS.Immediate;
  private flushTimer?: NodeJS.Timeout;
  private inflight = 0;
  private closed = false;
  private droppedSinceWarn = 0;

  constructor(private readonly deps: AlertsDeps) {
    this.sender = new AlertSender(deps.timeoutMs ?? 10_000);
    this.now = deps.now ?? Date.now;
    this.gateway = deps.gateway ?? hostname();
    this.retryDelays = deps.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.maxWaiting = deps.maxWaiting ?? 200;
  }

  /** Whether any target is configured (the one check on a call's path while there is none). */
  get active(): boolean {
    return this.targets().length > 0;
  }

  /** Whether any target takes `event` (a check that costs nothing before raising a costly one). */
  wants(event: AlertEventName): boolean {
    return this.targets().some((t) => !t.events || t.events.has(event));
  }

  /** Raises an event: queued for every target that takes it and whose dedupe lets it through. Never throws. */
  emit(event: AlertEventName, e: Omit<AlertEvent, 'event' | 'at'> & { at?: number }): void {
    if (this.closed) return;
    const now = this.now();
    const full: AlertEvent = { ...e, event, at: e.at ?? now };
    for (const target of this.targets()) {
      if (target.events && !target.events.has(event)) continue;
      if (target.dedupe.offer(full, now)) this.enqueue({ target, event: full, attempt: 0 });
    }
    this.armFlush();
  }

  /** The targets in force, masked. */
  targetsView(): AlertTargetView[] {
    return this.targets().map((t, index) => viewOf(t, index));
  }

  /** Sends a test alert to target `index` now (no dedupe, no retry); undefined when there is no such target. */
  async test(index: number): Promise<AlertTestResult | undefined> {
    const target = this.targets()[index];
    if (!target || this.closed) return undefined;
    const event: AlertEvent = {
      event: 'test',
      detail: 'A test alert from the gateway: this target works.',
      at: this.now(),
    };
    const outcome = await this.post(target, event);
    return { ...outcome, target: viewOf(target, index) };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.drainSoon) clearImmediate(this.drainSoon);
    clearTimeout(this.flushTimer);
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    this.queue.length = 0;
    let deadline: NodeJS.Timeout | undefined;
    await Promise.race([
      this.sender.close(),
      new Promise<void>((resolve) => (deadline = setTimeout(resolve, CLOSE_DEADLINE_MS).unref())),
    ]);
    clearTimeout(deadline);
  }

  private targets(): Target[] {
    // a config built by hand (a test, an old caller) may lack the key: no targets
    const specs = this.deps.targets() ?? NO_TARGETS;
    if (specs !== this.specs) {
      const before = new Map(this.compiled.map((t) => [identity(t.spec), t]));
      this.compiled = specs.map((spec) => {
        const events = spec.events ? new Set<string>(spec.events) : undefined;
        const kept = before.get(identity(spec));
        if (kept) return Object.assign(kept, { spec, events });
        return { spec, masked: maskAlertUrl(spec.url), events, dedupe: new AlertDedupe(spec.min_interval_s * 1000) };
      });
      this.specs = specs;
    }
    return this.compiled;
  }

  private enqueue(d: Delivery): void {
    if (this.queue.length + this.retryTimers.size >= this.maxWaiting) {
      if (this.droppedSinceWarn++ === 0)
        this.deps.log.warn({ event: d.event.event, target: d.target.masked }, 'alert queue full: alert dropped');
      return;
    }
    this.queue.push(d);
    this.scheduleDrain();
  }

  private scheduleDrain(): void {
    if (this.drainSoon || this.closed) return;
    this.drainSoon = setImmediate(() => {
      this.drainSoon = undefined;
      this.drain();
    });
    this.drainSoon.unref();
  }

  private drain(): void {
    while (!this.closed && this.inflight < MAX_INFLIGHT && this.queue.length) {
      const d = this.queue.shift()!;
      this.inflight++;
      void this.deliver(d).finally(() => {
        this.inflight--;
        if (this.queue.length) this.scheduleDrain();
      });
    }
    if (!this.queue.length) this.droppedSinceWarn = 0;
  }

  private async deliver(d: Delivery): Promise<void> {
    const outcome = await this.post(d.target, d.event);
    d.attempt++;
    if (outcome.ok || this.closed) return;
    const current = this.compiled.includes(d.target);
    const delay = this.retryDelays[d.attempt - 1];
    const base = { event: d.event.event, target: d.target.masked, attempt: d.attempt, error: outcome.error };
    if (delay === undefined || !current) {
      this.deps.log.warn(base, current ? 'alert not delivered: giving up' : 'alert not delivered: target removed');
      return;
    }
    this.deps.log.warn({ ...base, retryInMs: delay }, 'alert not delivered: will retry');
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      if (!this.closed) {
        this.queue.push(d);
        this.scheduleDrain();
      }
    }, delay);
    timer.unref();
    this.retryTimers.add(timer);
  }

  private async post(target: Target, event: AlertEvent): Promise<SendOutcome> {
    const outcome = await this.sender.send(target.spec.url, renderAlert(event, target.spec.format, this.gateway));
    target.last = { ...outcome, at: this.now(), event: event.event };
    if (outcome.ok) this.deps.log.debug({ event: event.event, target: target.masked, ms: outcome.ms }, 'alert sent');
    return outcome;
  }

  /** A held-back up/down goes out when its interval ends: one timer, for the earliest. */
  private armFlush(): void {
    if (this.closed) return;
    let next: number | undefined;
    for (const t of this.compiled) {
      const due = t.dedupe.nextDueAt();
      if (due !== undefined && (next === undefined || due < next)) next = due;
    }
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (next === undefined) return;
    this.flushTimer = setTimeout(() => this.flush(), Math.min(MAX_TIMER_MS, Math.max(0, next - this.now())));
    this.flushTimer.unref();
  }

  private flush(): void {
    this.flushTimer = undefined;
    const now = this.now();
    for (const target of this.compiled) {
      for (const event of target.dedupe.due(now)) this.enqueue({ target, event, attempt: 0 });
    }
    this.armFlush();
  }
}

/** Targets with the same URL, format and interval are the same target across a reload. */
function identity(spec: AlertTargetSpec): string {
  return JSON.stringify([spec.url, spec.format, spec.min_interval_s]);
}

function viewOf(t: Target, index: number): AlertTargetView {
  const view: AlertTargetView = {
    index,
    url: t.masked,
    format: t.spec.format,
    events: t.spec.events ?? 'all',
    min_interval_s: t.spec.min_interval_s,
  };
  if (t.last) view.last = t.last;
  return view;
}
