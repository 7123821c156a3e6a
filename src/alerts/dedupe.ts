/**
 * One target's dedupe: the same event for the same subject is sent at most once per interval
 * (the first one goes at once, repeats are dropped). A backend's up and down are a pair: when
 * one of them is held back by the interval, the latest is kept and sent when that interval
 * ends, but only if it differs from the last state sent, so a flapping backend costs at most
 * a down, an up and one closing word per interval, and the last word is always its state. Pure:
 * the caller says what time it is and arms a timer for `nextDueAt`.
 */
import { dedupeKey, type AlertEvent } from './events.ts';

/** Past this many remembered keys, the ones whose interval is over are forgotten. */
const PRUNE_AT = 1000;

type StateEvent = 'backend_down' | 'backend_up';

export class AlertDedupe {
  /** Dedupe key → when it was last sent. */
  private readonly sent = new Map<string, number>();
  /** Backend → the last up/down sent for it. */
  private readonly stateSent = new Map<string, StateEvent>();
  /** Backend → the latest up/down held back, and when its interval ends. */
  private readonly held = new Map<string, { event: AlertEvent; dueAt: number }>();

  constructor(private readonly intervalMs: number) {}

  /** Whether `e` goes now; a held-back up/down is kept for `due`. */
  offer(e: AlertEvent, now: number): boolean {
    const key = dedupeKey(e);
    const last = this.sent.get(key);
    const pair = isState(e) ? e.backend : undefined;
    if (this.intervalMs > 0 && last !== undefined && now - last < this.intervalMs) {
      if (pair !== undefined) this.held.set(pair, { event: e, dueAt: last + this.intervalMs });
      return false;
    }
    this.markSent(e, now);
    if (pair !== undefined) this.held.delete(pair);
    this.prune(now);
    return true;
  }

  /** The held-back states whose interval has ended and which differ from the last state sent. */
  due(now: number): AlertEvent[] {
    const out: AlertEvent[] = [];
    for (const [backend, h] of this.held) {
      if (h.dueAt > now) continue;
      this.held.delete(backend);
      if (this.stateSent.get(backend) === h.event.event) continue;
      const event = { ...h.event, detail: `${h.event.detail} (its state changed more than once in the interval)` };
      this.markSent(event, now);
      out.push(event);
    }
    return out;
  }

  /** When `due` has something next, if ever. */
  nextDueAt(): number | undefined {
    let next: number | undefined;
    for (const h of this.held.values()) if (next === undefined || h.dueAt < next) next = h.dueAt;
    return next;
  }

  private markSent(e: AlertEvent, now: number): void {
    this.sent.set(dedupeKey(e), now);
    if (isState(e) && e.backend !== undefined) this.stateSent.set(e.backend, e.event as StateEvent);
  }

  private prune(now: number): void {
    if (this.sent.size <= PRUNE_AT) return;
    for (const [key, at] of this.sent) if (now - at >= this.intervalMs) this.sent.delete(key);
  }
}

function isState(e: AlertEvent): boolean {
  return e.event === 'backend_down' || e.event === 'backend_up';
}
