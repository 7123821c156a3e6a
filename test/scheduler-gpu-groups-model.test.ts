/**
 * Randomised check of GPU groups against a brute-force reference model of the rules (scan
 * every waiter of every member on every decision): parks, releases, time passing, aborts,
 * backends changing group / cap / availability, removals, group caps reconfigured. Every call
 * must get the same outcome, the groups must match, and the switch hook must fire the same.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from './helpers/fake-clock.ts';
import {
  Scheduler,
  type BackendKind,
  type Candidate,
  type GroupSwitchEvent,
  type Lease,
  type SchedulerRejection,
} from '../src/scheduler/index.ts';
import { prng } from './helpers/prng.ts';
import { settle } from './helpers/scheduler-harness.ts';

const AFFINITY_MS = 400;

type Outcome =
  { kind: 'pending' } | { kind: 'leased'; backend: string; model: string } | { kind: 'rejected'; reason: string };

interface Spec {
  name: string;
  cap: number;
  paid: boolean;
  available: boolean;
  kind: BackendKind;
  group?: string;
}
interface ModelBackend extends Spec {
  inflight: number;
  last?: string;
  removed: boolean;
}
interface ModelGroup {
  name: string;
  cap: number;
  inflight: number;
  members: ModelBackend[];
  lastKind?: BackendKind;
}
interface ModelWaiter {
  id: number;
  candidates: Candidate[];
  enqueuedAt: number;
  deadline: number;
}
/** A lease as the model sees it: where it was granted, and on which group. */
interface ModelLease {
  backend: ModelBackend;
  group?: ModelGroup;
}

const free = (x: { cap: number; inflight: number }) => x.cap === 0 || x.inflight < x.cap;

class ReferenceModel {
  backends: ModelBackend[] = [];
  groups: ModelGroup[] = [];
  caps = new Map<string, number>();
  waiters: ModelWaiter[] = [];
  readonly outcomes = new Map<number, Outcome>();
  readonly leases = new Map<number, ModelLease>();
  readonly events: GroupSwitchEvent[] = [];
  now = 0;
  constructor(private readonly maxParked: number) {}

  configure(caps: Record<string, number>): void {
    this.caps = new Map(Object.entries(caps));
    for (const name of this.caps.keys()) this.obtain(name);
    for (const g of [...this.groups]) {
      g.cap = this.caps.get(g.name) ?? 1;
      this.prune(g);
    }
    this.handOffEverywhere();
  }

  upsert(spec: Spec): void {
    let b = this.backends.find((x) => x.name === spec.name);
    if (b) Object.assign(b, spec, { removed: false });
    else this.backends.push((b = { ...spec, inflight: 0, removed: false }));
    const old = this.groupOf(b);
    if (old?.name !== spec.group) {
      if (old) {
        old.members = old.members.filter((m) => m !== b);
        this.prune(old);
      }
      if (spec.group) this.obtain(spec.group).members.push(b);
    }
    this.handOffEverywhere();
  }

  remove(name: string): void {
    const b = this.backends.find((x) => x.name === name);
    if (!b) return;
    if (b.inflight > 0) b.removed = true;
    else this.forget(b);
  }

  acquire(id: number, candidates: Candidate[], parkMs: number): void {
    const usable = candidates
      .filter((c) => this.routable(c.backend))
      .sort((x, y) => Number(this.routable(x.backend)!.paid) - Number(this.routable(y.backend)!.paid));
    if (usable.length === 0) return void this.outcomes.set(id, { kind: 'rejected', reason: 'no_backend' });
    const pick = usable.find((c) => {
      const b = this.routable(c.backend)!;
      const g = this.groupOf(b);
      return free(b) && (!g || free(g));
    });
    if (pick) return this.grant(id, this.routable(pick.backend)!, pick.model);
    if (parkMs === 0) return void this.outcomes.set(id, { kind: 'rejected', reason: 'parking_off' });
    if (this.waiters.length >= this.maxParked)
      return void this.outcomes.set(id, { kind: 'rejected', reason: 'queue_full' });
    this.waiters.push({ id, candidates, enqueuedAt: this.now, deadline: this.now + parkMs });
    this.outcomes.set(id, { kind: 'pending' });
  }

  release(id: number): void {
    const { backend: b, group: g } = this.leases.get(id)!;
    this.leases.delete(id);
    b.inflight--;
    if (!g) {
      if (b.removed) return void (b.inflight === 0 && this.forget(b));
      const now = this.groupOf(b);
      return now ? this.handOffGroup(now) : this.handOff(b);
    }
    g.inflight--;
    if (b.removed && b.inflight === 0) this.forget(b);
    this.handOffGroup(g);
    const now = this.groupOf(b);
    if (!b.removed && now !== g) {
      if (now) this.handOffGroup(now);
      else this.handOff(b);
    }
    this.prune(g);
  }

  advance(ms: number): void {
    this.now += ms;
    for (const w of this.waiters.filter((x) => x.deadline <= this.now)) this.leave(w.id, 'park_timeout');
  }

  leave(id: number, reason: string): void {
    this.waiters = this.waiters.filter((w) => w.id !== id);
    this.outcomes.set(id, { kind: 'rejected', reason });
  }

  private handOffEverywhere(): void {
    for (const b of this.backends) if (!this.groupOf(b)) this.handOff(b);
    for (const g of [...this.groups]) this.handOffGroup(g);
  }

  private handOff(b: ModelBackend): void {
    while (!b.removed && b.available && free(b)) {
      const eligible = this.waiters.filter((w) => w.candidates.some((c) => c.backend === b.name));
      if (eligible.length === 0) return;
      const oldest = eligible[0];
      let pick = { waiter: oldest, model: firstKey(oldest, b.name) };
      if (!(this.now - oldest.enqueuedAt > AFFINITY_MS)) {
        const sameModel = eligible.find((w) => w.candidates.some((c) => c.backend === b.name && c.model === b.last));
        if (sameModel) pick = { waiter: sameModel, model: b.last! };
      }
      this.waiters = this.waiters.filter((w) => w !== pick.waiter);
      this.grant(pick.waiter.id, b, pick.model);
    }
  }

  /** Across every eligible member: overdue oldest, else same model on the group's last kind, else oldest. */
  private handOffGroup(g: ModelGroup): void {
    while (free(g)) {
      const members = g.members.filter((m) => !m.removed && m.available && free(m));
      // Every (waiter, member) pair, waiter order first, then unpaid members before paid, then join order.
      const pairs = this.waiters.flatMap((w) =>
        members
          .filter((m) => w.candidates.some((c) => c.backend === m.name))
          .sort((x, y) => Number(x.paid) - Number(y.paid))
          .map((m) => ({ waiter: w, member: m })),
      );
      if (pairs.length === 0) return;
      let pick = { ...pairs[0], model: firstKey(pairs[0].waiter, pairs[0].member.name) };
      if (!(this.now - pick.waiter.enqueuedAt > AFFINITY_MS)) {
        const same = pairs.find(
          ({ waiter, member }) =>
            member.kind === g.lastKind &&
            member.last !== undefined &&
            waiter.candidates.some((c) => c.backend === member.name && c.model === member.last),
        );
        if (same) pick = { ...same, model: same.member.last! };
      }
      this.waiters = this.waiters.filter((w) => w !== pick.waiter);
      this.grant(pick.waiter.id, pick.member, pick.model);
    }
  }

  private grant(id: number, b: ModelBackend, model: string): void {
    const g0 = this.groupOf(b);
    assert.ok(free(b) && (!g0 || free(g0)), 'the model grants only free slots');
    b.inflight++;
    b.last = model;
    const g = this.groupOf(b);
    if (g) {
      g.inflight++;
      if (g.lastKind !== undefined && g.lastKind !== b.kind)
        this.events.push({ group: g.name, from: g.lastKind, to: b.kind, backend: b.name });
      g.lastKind = b.kind;
    }
    this.leases.set(id, { backend: b, group: g });
    this.outcomes.set(id, { kind: 'leased', backend: b.name, model });
  }

  private forget(b: ModelBackend): void {
    this.backends = this.backends.filter((x) => x !== b);
    const g = this.groupOf(b);
    if (g) {
      g.members = g.members.filter((m) => m !== b);
      this.prune(g);
    }
  }

  private obtain(name: string): ModelGroup {
    let g = this.groups.find((x) => x.name === name);
    if (!g) this.groups.push((g = { name, cap: this.caps.get(name) ?? 1, inflight: 0, members: [] }));
    return g;
  }

  private prune(g: ModelGroup): void {
    if (g.members.length === 0 && g.inflight === 0 && !this.caps.has(g.name))
      this.groups = this.groups.filter((x) => x !== g);
  }

  /** The group the backend is a member of now (removed members included). */
  groupOf(b: ModelBackend): ModelGroup | undefined {
    return this.groups.find((g) => g.members.includes(b));
  }

  private routable(name: string): ModelBackend | undefined {
    const b = this.backends.find((x) => x.name === name);
    return b && !b.removed && b.available ? b : undefined;
  }
}

function firstKey(w: ModelWaiter, backend: string): string {
  return w.candidates.find((c) => c.backend === backend)!.model;
}

async function runScenario(seed: number, steps: number): Promise<void> {
  const random = prng(seed);
  const pickOne = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const kinds: Record<string, BackendKind> = { l1: 'llm', l2: 'llm', l3: 'llm', c1: 'media', c2: 'media', p: 'llm' };
  const names = Object.keys(kinds);
  const groupNames = ['g1', 'g2', 'g3', undefined];
  const models = ['m1', 'm2', 'm3'];
  const maxParked = 40;

  const clock = new FakeClock(0);
  const events: GroupSwitchEvent[] = [];
  const scheduler = new Scheduler({
    clock,
    maxParked,
    affinityMaxWaitMs: AFFINITY_MS,
    onGroupSwitch: (e) => events.push(e),
  });
  const model = new ReferenceModel(maxParked);
  const actual = new Map<number, Outcome>();
  const leases = new Map<number, Lease>();
  const aborters = new Map<number, AbortController>();
  let nextId = 1;

  const upsert = (spec: Spec) => {
    scheduler.upsertBackend(spec);
    model.upsert(spec);
  };
  const randomSpec = (name: string): Spec => ({
    name,
    cap: Math.floor(random() * 3),
    paid: name === 'p',
    available: random() < 0.85,
    kind: kinds[name],
    group: pickOne(groupNames),
  });
  const configure = () => {
    const caps: Record<string, number> = {};
    for (const g of ['g1', 'g2']) if (random() < 0.7) caps[g] = Math.floor(random() * 3);
    scheduler.configureGroups(Object.fromEntries(Object.entries(caps).map(([g, cap]) => [g, { cap }])));
    model.configure(caps);
  };
  configure();
  for (const name of names) upsert({ ...randomSpec(name), cap: 1 + Math.floor(random() * 2), available: true });

  for (let step = 0; step < steps; step++) {
    const roll = random();
    if (roll < 0.42) {
      const id = nextId++;
      const media = random() < 0.4;
      const pool = names.filter((n) => (kinds[n] === 'media') === media);
      const candidates = Array.from({ length: 1 + Math.floor(random() * 3) }, () => ({
        backend: pickOne(pool),
        model: pickOne(models),
      }));
      const parkMs = random() < 0.1 ? 0 : 100 + Math.floor(random() * 2_000);
      const controller = new AbortController();
      aborters.set(id, controller);
      actual.set(id, { kind: 'pending' });
      scheduler.acquire({ alias: `alias-${id % 3}`, candidates, parkMs, signal: controller.signal }).then(
        (lease) => {
          leases.set(id, lease);
          actual.set(id, { kind: 'leased', backend: lease.backend, model: lease.model });
        },
        (error: SchedulerRejection) => void actual.set(id, { kind: 'rejected', reason: error.reason }),
      );
      model.acquire(id, candidates, parkMs);
    } else if (roll < 0.72 && leases.size > 0) {
      const id = pickOne([...leases.keys()]);
      leases.get(id)!.release();
      leases.delete(id);
      model.release(id);
    } else if (roll < 0.82) {
      const ms = Math.floor(random() * 300);
      clock.advance(ms);
      model.advance(ms);
    } else if (roll < 0.88) {
      const pending = model.waiters.map((w) => w.id);
      if (pending.length > 0) {
        const id = pickOne(pending);
        aborters.get(id)!.abort();
        model.leave(id, 'aborted');
      }
    } else if (roll < 0.96) {
      upsert(randomSpec(pickOne(names)));
    } else if (roll < 0.98) {
      const name = pickOne(names);
      scheduler.removeBackend(name);
      model.remove(name);
    } else {
      configure();
    }
    await settle();
    const where = `seed ${seed}, step ${step}`;
    for (const [id, expected] of model.outcomes) assert.deepEqual(actual.get(id), expected, `${where}: call ${id}`);
    assert.deepEqual(events, model.events, `${where}: switch events`);
    const snapshot = scheduler.snapshot();
    assert.equal(snapshot.parked.length, model.waiters.length, `${where}: parked count`);
    assert.deepEqual(
      snapshot.groups,
      model.groups.map((g) => ({
        name: g.name,
        inflight: g.inflight,
        cap: g.cap,
        members: g.members.filter((m) => !m.removed).map((m) => m.name),
        lastKind: g.lastKind,
      })),
      `${where}: groups`,
    );
  }
  for (const controller of aborters.values()) controller.abort();
  for (const lease of leases.values()) lease.release();
  assert.equal(clock.pendingTimers, 0);
  assert.ok(
    scheduler.snapshot().groups.every((g) => g.inflight === 0),
    'every group slot released',
  );
}

describe('gpu groups: the scheduler matches a brute-force reference model', () => {
  for (const seed of [1, 2, 3, 7, 42, 1234]) {
    it(`random scenario, seed ${seed}`, async () => {
      await runScenario(seed, 2_000);
    });
  }
});
