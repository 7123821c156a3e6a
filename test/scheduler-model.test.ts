/**
 * Randomised check of the scheduler against a brute-force reference model of the rules
 * (scan every waiter on every decision). Thousands of mixed operations — park, release,
 * time passing, disconnects, fleet changes, model-list refreshes — must give every call the
 * same outcome.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from './helpers/fake-clock.ts';
import { Scheduler, type Candidate, type Lease, type SchedulerRejection } from '../src/scheduler/index.ts';
import { prng } from './helpers/prng.ts';
import { settle } from './helpers/scheduler-harness.ts';

const AFFINITY_MS = 400;

type Outcome =
  { kind: 'pending' } | { kind: 'leased'; backend: string; model: string } | { kind: 'rejected'; reason: string };

interface ModelBackend {
  name: string;
  cap: number;
  paid: boolean;
  available: boolean;
  inflight: number;
  last?: string;
}
interface ModelWaiter {
  id: number;
  candidates: Candidate[];
  enqueuedAt: number;
  deadline: number;
  refreshable: boolean;
}

/** What each ticket's refresh returns during one refresh: candidates, or a throw. */
type RefreshAnswers = ReadonlyMap<number, Candidate[] | 'throw'>;

/** The rules, written the obvious way: every decision scans all waiters. */
class ReferenceModel {
  readonly backends: ModelBackend[] = [];
  waiters: ModelWaiter[] = [];
  readonly outcomes = new Map<number, Outcome>();
  now = 0;
  constructor(private readonly maxParked: number) {}

  upsert(spec: Omit<ModelBackend, 'inflight' | 'last'>): void {
    const existing = this.backends.find((b) => b.name === spec.name);
    if (existing) Object.assign(existing, spec);
    else this.backends.push({ ...spec, inflight: 0 });
    for (const b of this.backends) this.handOff(b);
  }

  acquire(id: number, candidates: Candidate[], parkMs: number, refreshable: boolean): void {
    const usable = candidates
      .filter((c) => this.backend(c.backend)?.available)
      .sort((x, y) => Number(this.backend(x.backend)!.paid) - Number(this.backend(y.backend)!.paid));
    if (usable.length === 0) return void this.outcomes.set(id, { kind: 'rejected', reason: 'no_backend' });
    const free = usable.find((c) => isFree(this.backend(c.backend)!));
    if (free) return this.grant(id, this.backend(free.backend)!, free.model);
    if (parkMs === 0) return void this.outcomes.set(id, { kind: 'rejected', reason: 'parking_off' });
    if (this.waiters.length >= this.maxParked)
      return void this.outcomes.set(id, { kind: 'rejected', reason: 'queue_full' });
    this.waiters.push({ id, candidates, enqueuedAt: this.now, deadline: this.now + parkMs, refreshable });
    this.outcomes.set(id, { kind: 'pending' });
  }

  release(backend: string): void {
    const b = this.backend(backend)!;
    b.inflight--;
    this.handOff(b);
  }

  /** Refreshable waiters gain the candidates on backends they did not have; then hand-off everywhere. */
  refresh(answers: RefreshAnswers): void {
    for (const w of this.waiters) {
      if (!w.refreshable) continue;
      const answer = answers.get(w.id);
      const fresh = answer === undefined || answer === 'throw' ? [] : answer;
      const had = new Set(w.candidates.map((c) => c.backend));
      w.candidates = [...w.candidates, ...fresh.filter((c) => !had.has(c.backend))];
    }
    for (const b of this.backends) this.handOff(b);
  }

  advance(ms: number): void {
    this.now += ms;
    for (const w of this.waiters.filter((x) => x.deadline <= this.now)) this.leave(w.id, 'park_timeout');
  }

  leave(id: number, reason: string): void {
    this.waiters = this.waiters.filter((w) => w.id !== id);
    this.outcomes.set(id, { kind: 'rejected', reason });
  }

  private handOff(b: ModelBackend): void {
    while (b.available && isFree(b)) {
      const eligible = this.waiters.filter((w) => w.candidates.some((c) => c.backend === b.name));
      if (eligible.length === 0) return;
      const oldest = eligible[0];
      const firstKey = (w: ModelWaiter) => w.candidates.find((c) => c.backend === b.name)!.model;
      let pick = { waiter: oldest, model: firstKey(oldest) };
      if (!(this.now - oldest.enqueuedAt > AFFINITY_MS)) {
        const sameModel = eligible.find((w) => w.candidates.some((c) => c.backend === b.name && c.model === b.last));
        if (sameModel) pick = { waiter: sameModel, model: b.last! };
      }
      this.waiters = this.waiters.filter((w) => w !== pick.waiter);
      this.grant(pick.waiter.id, b, pick.model);
    }
  }

  private grant(id: number, b: ModelBackend, model: string): void {
    b.inflight++;
    b.last = model;
    this.outcomes.set(id, { kind: 'leased', backend: b.name, model });
  }

  private backend(name: string): ModelBackend | undefined {
    return this.backends.find((b) => b.name === name);
  }
}

function isFree(b: ModelBackend): boolean {
  return b.cap === 0 || b.inflight < b.cap;
}

async function runScenario(seed: number, steps: number): Promise<void> {
  const random = prng(seed);
  const pickOne = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const names = ['a', 'b', 'c', 'd', 'e', 'ghost'];
  const models = ['m1', 'm2', 'm3'];
  const maxParked = 40;

  const clock = new FakeClock(0);
  const scheduler = new Scheduler({ clock, maxParked, affinityMaxWaitMs: AFFINITY_MS });
  const model = new ReferenceModel(maxParked);
  const actual = new Map<number, Outcome>();
  const leases = new Map<number, Lease>();
  const aborters = new Map<number, AbortController>();
  let refreshAnswers: RefreshAnswers = new Map();
  let refreshedIds: number[] = [];
  let nextId = 1;
  const randomCandidates = (max: number): Candidate[] =>
    Array.from({ length: Math.floor(random() * (max + 1)) }, () => ({
      backend: pickOne(names),
      model: pickOne(models),
    }));

  const upsert = (spec: { name: string; cap: number; paid: boolean; available: boolean }) => {
    scheduler.upsertBackend(spec);
    model.upsert(spec);
  };
  for (const name of names.slice(0, 4))
    upsert({ name, cap: 1 + Math.floor(random() * 2), paid: name === 'd', available: true });

  for (let step = 0; step < steps; step++) {
    const roll = random();
    if (roll < 0.45) {
      const id = nextId++;
      const candidates: Candidate[] = [{ backend: pickOne(names), model: pickOne(models) }, ...randomCandidates(2)];
      const parkMs = random() < 0.1 ? 0 : 100 + Math.floor(random() * 2_000);
      const refreshable = random() < 0.6;
      const refresh = () => {
        refreshedIds.push(id);
        const answer = refreshAnswers.get(id);
        if (answer === 'throw') throw new Error(`refresh of call ${id} failed`);
        return answer ?? [];
      };
      const controller = new AbortController();
      aborters.set(id, controller);
      actual.set(id, { kind: 'pending' });
      const ticket = {
        alias: `alias-${id % 3}`,
        candidates,
        parkMs,
        signal: controller.signal,
        refresh: refreshable ? refresh : undefined,
      };
      scheduler.acquire(ticket).then(
        (lease) => {
          leases.set(id, lease);
          actual.set(id, { kind: 'leased', backend: lease.backend, model: lease.model });
        },
        (error: SchedulerRejection) => void actual.set(id, { kind: 'rejected', reason: error.reason }),
      );
      model.acquire(id, candidates, parkMs, refreshable);
    } else if (roll < 0.75 && leases.size > 0) {
      const id = pickOne([...leases.keys()]);
      const lease = leases.get(id)!;
      leases.delete(id);
      lease.release();
      model.release(lease.backend);
    } else if (roll < 0.85) {
      const ms = Math.floor(random() * 300);
      clock.advance(ms);
      model.advance(ms);
    } else if (roll < 0.92) {
      const pending = model.waiters.map((w) => w.id);
      if (pending.length > 0) {
        const id = pickOne(pending);
        aborters.get(id)!.abort();
        model.leave(id, 'aborted');
      }
    } else if (roll < 0.96) {
      const name = pickOne(names.slice(0, 5));
      upsert({ name, cap: Math.floor(random() * 3), paid: name === 'd', available: random() < 0.8 });
    } else {
      // Model lists changed: every refreshable waiter re-resolves, oldest first, once.
      refreshAnswers = new Map(model.waiters.map((w) => [w.id, random() < 0.15 ? 'throw' : randomCandidates(3)]));
      const expectedOrder = model.waiters.filter((w) => w.refreshable).map((w) => w.id);
      refreshedIds = [];
      scheduler.refreshCandidates();
      model.refresh(refreshAnswers);
      assert.deepEqual(refreshedIds, expectedOrder, `seed ${seed}, step ${step}: refresh order`);
    }
    await settle();
    for (const [id, expected] of model.outcomes) {
      assert.deepEqual(actual.get(id), expected, `seed ${seed}, step ${step}: call ${id}`);
    }
    assert.equal(scheduler.snapshot().parked.length, model.waiters.length, `seed ${seed}, step ${step}: parked count`);
  }
  for (const controller of aborters.values()) controller.abort();
  assert.equal(clock.pendingTimers, 0);
}

describe('scheduler: matches a brute-force reference model of the rules', () => {
  for (const seed of [1, 2, 3, 42]) {
    it(`random scenario, seed ${seed}`, async () => {
      await runScenario(seed, 1_500);
    });
  }
});
