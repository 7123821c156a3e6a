import type { Clock } from '../../src/scheduler/clock.ts';

interface FakeTimer {
  readonly id: number;
  readonly dueAt: number;
  readonly fn: () => void;
}

/**
 * A clock for tests: time stands still until `advance(ms)`, which moves it forward and fires
 * every timer that falls due, in due-time order (ties in the order they were set). Timers set
 * by a firing timer run too when they fall due within the same advance.
 */
export class FakeClock implements Clock {
  private time: number;
  private nextId = 1;
  private readonly timers = new Map<number, FakeTimer>();

  constructor(startAt = 1_000_000) {
    this.time = startAt;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer: FakeTimer = { id: this.nextId++, dueAt: this.time + Math.max(0, ms), fn };
    this.timers.set(timer.id, timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Timers set and not yet fired or cleared. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing due timers in order along the way. */
  advance(ms: number): void {
    const target = this.time + ms;
    for (;;) {
      const due = this.earliestDueBy(target);
      if (!due) break;
      this.time = Math.max(this.time, due.dueAt);
      this.timers.delete(due.id);
      due.fn();
    }
    this.time = target;
  }

  private earliestDueBy(target: number): FakeTimer | undefined {
    let earliest: FakeTimer | undefined;
    for (const timer of this.timers.values()) {
      if (timer.dueAt > target) continue;
      if (!earliest || timer.dueAt < earliest.dueAt) earliest = timer;
    }
    return earliest;
  }
}
