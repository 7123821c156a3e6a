/**
 * Parking and hand-off: FIFO waits, the three hand-off rules, no overtaking, fleet changes,
 * timeouts, disconnects, limits, and releases of leases on removed backends.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SchedulerRejection, type BackendSlotSpec } from '../src/scheduler/index.ts';
import {
  AFFINITY_MAX_WAIT_MS,
  PARK_MS,
  candidates,
  grantedOn,
  leaseOf,
  schedulerHarness,
  settle,
  type FleetBackend,
  type TrackedCall,
} from './helpers/scheduler-harness.ts';

describe('scheduler: parking is FIFO', () => {
  it('waiters get a freed slot in arrival order', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    let current = hold(['gpu/m']);
    const calls = ['first', 'second', 'third'].map((name) => call(name, ['gpu/m']));
    await settle();
    assert.ok(
      calls.every((c) => !c.lease && !c.rejection),
      'everyone parks',
    );
    assert.equal(scheduler.hasParked(), true);
    const order: string[] = [];
    for (let i = 0; i < calls.length; i++) {
      current.release();
      await settle();
      const served = calls.filter((c) => c.lease && !order.includes(c.name));
      assert.equal(served.length, 1, 'one freed slot serves exactly one waiter');
      order.push(served[0].name);
      current = served[0].lease!;
    }
    assert.deepEqual(order, ['first', 'second', 'third']);
    assert.equal(scheduler.hasParked(), false);
  });

  it('the lease tells how long the ticket waited', async () => {
    const { clock, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const busy = hold(['gpu/m']);
    const waiting = call('w', ['gpu/m']);
    clock.advance(1234);
    busy.release();
    await settle();
    assert.equal(waiting.lease?.waitedMs, 1234);
  });
});

describe('scheduler: hand-off when a slot frees', () => {
  // Each case: gpu (cap 1) last ran `lastRan`; waiters park in order, `advanceAfter` ms passing
  // after each one; then gpu's slot frees and goes to `expect`.
  const cases: {
    name: string;
    lastRan: string;
    waiters: { name: string; asks: string[]; advanceAfter?: number }[];
    expect: string;
    expectTypeKey: string;
  }[] = [
    {
      name: '(3) the oldest when nobody matches what the backend last ran',
      lastRan: 'm1',
      waiters: [
        { name: 'old', asks: ['gpu/m2'] },
        { name: 'young', asks: ['gpu/m3'] },
      ],
      expect: 'old',
      expectTypeKey: 'm2',
    },
    {
      name: '(2) the oldest whose type key equals what the backend last ran (no model reload)',
      lastRan: 'm1',
      waiters: [
        { name: 'old', asks: ['gpu/m2'] },
        { name: 'same-model', asks: ['gpu/m1'] },
        { name: 'same-model-younger', asks: ['gpu/m1'] },
      ],
      expect: 'same-model',
      expectTypeKey: 'm1',
    },
    {
      name: '(1) an overdue waiter beats affinity',
      lastRan: 'm1',
      waiters: [
        { name: 'overdue', asks: ['gpu/m2'], advanceAfter: AFFINITY_MAX_WAIT_MS + 1 },
        { name: 'same-model', asks: ['gpu/m1'] },
      ],
      expect: 'overdue',
      expectTypeKey: 'm2',
    },
    {
      name: 'waiting exactly affinity_max_wait is not yet overdue',
      lastRan: 'm1',
      waiters: [
        { name: 'old', asks: ['gpu/m2'], advanceAfter: AFFINITY_MAX_WAIT_MS - 1 },
        { name: 'same-model', asks: ['gpu/m1'] }, // + 1 ms: old has waited exactly the limit
      ],
      expect: 'same-model',
      expectTypeKey: 'm1',
    },
    {
      name: 'affinity uses the matching candidate of a waiter that could run several models there',
      lastRan: 'm1',
      waiters: [
        { name: 'old', asks: ['gpu/m2'] },
        { name: 'either', asks: ['gpu/m3', 'gpu/m1'] },
      ],
      expect: 'either',
      expectTypeKey: 'm1',
    },
    {
      name: 'only waiters that can use the backend are considered',
      lastRan: 'm1',
      waiters: [
        { name: 'elsewhere', asks: ['other/m1'] },
        { name: 'here', asks: ['gpu/m9'] },
      ],
      expect: 'here',
      expectTypeKey: 'm9',
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { clock, scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'other' }]);
      const running = hold([`gpu/${c.lastRan}`]);
      hold(['other/busy']);
      const calls = c.waiters.map((w) => {
        const parked = call(w.name, w.asks);
        clock.advance(w.advanceAfter ?? 1);
        return parked;
      });
      running.release();
      await settle();
      const served = calls.filter((x) => x.lease);
      assert.deepEqual(
        served.map((x) => x.name),
        [c.expect],
      );
      assert.equal(grantedOn(served[0]), `gpu/${c.expectTypeKey}`);
      assert.equal(scheduler.snapshot().backends.find((b) => b.name === 'gpu')?.lastTypeKey, c.expectTypeKey);
    });
  }

  it('lastTypeKey follows the most recent lease granted, and affinity follows it', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const first = hold(['gpu/a']);
    const wantsB = call('wants-b', ['gpu/b']);
    const wantsA = call('wants-a', ['gpu/a']);
    const wantsB2 = call('wants-b-2', ['gpu/b']);
    first.release(); // last ran a → wants-a
    await settle();
    assert.ok(wantsA.lease && !wantsB.lease);
    wantsA.lease.release(); // last ran a, nobody else wants a → oldest: wants-b
    await settle();
    assert.ok(wantsB.lease && !wantsB2.lease);
    assert.equal(scheduler.snapshot().backends[0].lastTypeKey, 'b');
    leaseOf(wantsB)!.release(); // last ran b → wants-b-2
    await settle();
    assert.ok(wantsB2.lease);
  });

  it('a waiter with several backends is served once, by the first to free', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'a' }, { name: 'b' }]);
    const onA = hold(['a/m']);
    const onB = hold(['b/m']);
    const both = call('both', ['a/m', 'b/m']);
    onB.release();
    await settle();
    assert.equal(both.lease?.backend, 'b');
    onA.release();
    await settle();
    assert.deepEqual(
      scheduler.snapshot().backends.map((x) => [x.name, x.inflight]),
      [
        ['a', 0],
        ['b', 1],
      ],
    );
  });
});

describe('scheduler: fresh arrivals never overtake waiters', () => {
  it('a slot freed while someone waits is not up for grabs', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m']);
    const waiter = call('waiter', ['gpu/m']);
    running.release();
    // Same tick, before the waiter's promise callbacks ran: a fresh call finds no free slot.
    assert.equal(scheduler.tryAcquireNow(candidates('gpu/m'), new Set()), null);
    const fresh = call('fresh', ['gpu/m'], { parkMs: 0 });
    await settle();
    assert.equal(waiter.lease?.backend, 'gpu');
    assert.equal(fresh.rejection?.reason, 'parking_off');
  });

  it('a fresh arrival parks behind the waiters and is served after them', async () => {
    const { call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m']);
    const early = call('early', ['gpu/m']);
    const late = call('late', ['gpu/m']);
    running.release();
    await settle();
    assert.ok(early.lease && !late.lease);
    early.lease.release();
    await settle();
    assert.ok(late.lease);
  });

  it('tryAcquireNow still takes free slots nobody waits for', async () => {
    const { call, hold, scheduler } = schedulerHarness([{ name: 'gpu' }, { name: 'spare' }]);
    hold(['gpu/m']);
    const waiter = call('waiter', ['gpu/m']);
    const lease = scheduler.tryAcquireNow(candidates('gpu/m', 'spare/m'), new Set());
    assert.equal(lease?.backend, 'spare');
    await settle();
    assert.equal(waiter.lease, undefined);
  });
});

describe('scheduler: fairness across aliases', () => {
  it('no head-of-line blocking: a younger waiter gets its own backend when that frees first', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'a' }, { name: 'b' }]);
    const onA = hold(['a/m']);
    const onB = hold(['b/m']);
    const older = call('older', ['a/m'], { alias: 'alias-a' });
    const younger = call('younger', ['b/m'], { alias: 'alias-b' });
    onB.release();
    await settle();
    assert.equal(younger.lease?.backend, 'b');
    assert.equal(older.lease, undefined);
    assert.deepEqual(scheduler.snapshot().parkedByAlias, { 'alias-a': 1 });
    onA.release();
    await settle();
    assert.equal(grantedOn(older), 'a/m');
  });
});

describe('scheduler: fleet changes hand free slots to waiters at once', () => {
  const cases: { name: string; fleet: FleetBackend[]; change: BackendSlotSpec }[] = [
    {
      name: 'a backend unknown at park time is added by config',
      fleet: [{ name: 'gpu' }],
      change: { name: 'new', cap: 1, paid: false, available: true },
    },
    {
      name: 'an unavailable backend becomes healthy',
      fleet: [{ name: 'gpu' }, { name: 'new', available: false }],
      change: { name: 'new', cap: 1, paid: false, available: true },
    },
    {
      name: 'a backend’s cap is raised',
      fleet: [{ name: 'gpu' }, { name: 'new', cap: 1 }],
      change: { name: 'new', cap: 2, paid: false, available: true },
    },
    {
      name: 'a backend’s cap is lifted to unlimited',
      fleet: [{ name: 'gpu' }, { name: 'new', cap: 1 }],
      change: { name: 'new', cap: 0, paid: false, available: true },
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { scheduler, call, hold } = schedulerHarness(c.fleet);
      hold(['gpu/m']);
      if (scheduler.snapshot().backends.some((b) => b.name === 'new' && b.available)) hold(['new/m']);
      const waiter = call('waiter', ['gpu/m', 'new/m2']);
      await settle();
      assert.equal(waiter.lease, undefined, 'parks while everything is busy');
      scheduler.upsertBackend(c.change);
      await settle();
      assert.equal(grantedOn(waiter), 'new/m2');
      assert.equal(scheduler.hasParked(), false);
    });
  }

  it('raising a cap serves as many waiters as there are new slots, in order', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu', cap: 1 }]);
    hold(['gpu/m']);
    const calls = ['w1', 'w2', 'w3', 'w4'].map((name) => call(name, ['gpu/m']));
    scheduler.upsertBackend({ name: 'gpu', cap: 3, paid: false, available: true });
    await settle();
    assert.deepEqual(
      calls.map((c) => Boolean(c.lease)),
      [true, true, false, false],
    );
  });

  it('a slot that frees on an unavailable backend waits until the backend is back', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m']);
    const waiter = call('waiter', ['gpu/m']);
    scheduler.upsertBackend({ name: 'gpu', cap: 1, paid: false, available: false });
    running.release();
    await settle();
    assert.equal(waiter.lease, undefined);
    scheduler.upsertBackend({ name: 'gpu', cap: 1, paid: false, available: true });
    await settle();
    assert.equal(grantedOn(waiter), 'gpu/m');
  });
});

describe('scheduler: refusals', () => {
  function expectRejection(c: TrackedCall, reason: string, retryAfter: number | undefined): void {
    assert.ok(c.rejection instanceof SchedulerRejection, `${c.name} should be refused`);
    assert.equal(c.rejection.reason, reason);
    assert.equal(c.rejection.retryAfter, retryAfter);
  }

  it("park timeout: 'park_timeout', Retry-After 2, and the waiter leaves the queue at once", async () => {
    const { clock, scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m']);
    const waiter = call('waiter', ['gpu/m'], { parkMs: 5_000 });
    const patient = call('patient', ['gpu/m'], { parkMs: 50_000 });
    clock.advance(4_999);
    await settle();
    assert.equal(waiter.rejection, undefined);
    clock.advance(1);
    await settle();
    expectRejection(waiter, 'park_timeout', 2);
    assert.deepEqual(
      scheduler.snapshot().parked.map((p) => p.alias),
      ['patient'],
    );
    running.release();
    await settle();
    assert.equal(patient.lease?.backend, 'gpu', 'the slot goes to the next waiter, not the timed-out one');
    assert.equal(clock.pendingTimers, 0, 'no park timer left behind');
  });

  it("parking off (parkMs 0): 'parking_off', Retry-After 1", async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    hold(['gpu/m']);
    const refused = call('refused', ['gpu/m'], { parkMs: 0 });
    await settle();
    expectRejection(refused, 'parking_off', 1);
    assert.equal(scheduler.hasParked(), false);
  });

  it("queue full: 'queue_full', Retry-After 2; room again once a waiter leaves", async () => {
    const { clock, call, hold } = schedulerHarness([{ name: 'gpu' }], { maxParked: 2 });
    hold(['gpu/m']);
    const parked = [call('w1', ['gpu/m'], { parkMs: 1_000 }), call('w2', ['gpu/m'])];
    const third = call('w3', ['gpu/m']);
    await settle();
    expectRejection(third, 'queue_full', 2);
    assert.ok(parked.every((c) => !c.rejection));
    clock.advance(1_000);
    const fourth = call('w4', ['gpu/m']);
    await settle();
    assert.equal(fourth.rejection, undefined);
  });

  it('configure() changes max parked and affinity wait on the fly', async () => {
    const { clock, scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }], { maxParked: 1 });
    const running = hold(['gpu/a']);
    const old = call('old', ['gpu/b']);
    scheduler.configure({ maxParked: 2, affinityMaxWaitMs: 5 });
    const sameModel = call('same-model', ['gpu/a']);
    clock.advance(6); // old is now overdue under the new limit, not under the old one
    running.release();
    await settle();
    assert.equal(sameModel.rejection, undefined, 'room for a second waiter');
    assert.ok(old.lease && !sameModel.lease, 'the overdue waiter beats affinity');
  });

  it("client disconnect while parked: 'aborted' at once, the ticket leaves the queue", async () => {
    const { clock, scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m']);
    const controller = new AbortController();
    const gone = call('gone', ['gpu/m'], { signal: controller.signal });
    const stays = call('stays', ['gpu/m']);
    controller.abort();
    await settle();
    expectRejection(gone, 'aborted', undefined);
    assert.deepEqual(scheduler.snapshot().parkedByAlias, { stays: 1 });
    assert.equal(clock.pendingTimers, 1, 'the aborted ticket’s park timer is cleared');
    running.release();
    await settle();
    assert.equal(stays.lease?.backend, 'gpu');
  });

  it("an already aborted signal is refused with 'aborted' without parking", async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    hold(['gpu/m']);
    const gone = call('gone', ['gpu/m'], { signal: AbortSignal.abort() });
    await settle();
    expectRejection(gone, 'aborted', undefined);
    assert.equal(scheduler.hasParked(), false);
  });

  it('an abort after the lease was granted changes nothing', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m']);
    const controller = new AbortController();
    const waiter = call('waiter', ['gpu/m'], { signal: controller.signal });
    running.release();
    controller.abort();
    await settle();
    assert.equal(waiter.lease?.backend, 'gpu');
    assert.equal(waiter.rejection, undefined);
    assert.equal(scheduler.snapshot().backends[0].inflight, 1);
  });
});

describe('scheduler: leases', () => {
  it('release is idempotent', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const lease = hold(['gpu/m']);
    const w1 = call('w1', ['gpu/m']);
    const w2 = call('w2', ['gpu/m']);
    lease.release();
    lease.release();
    await settle();
    assert.ok(w1.lease && !w2.lease, 'a second release must not free a second slot');
    assert.equal(scheduler.snapshot().backends[0].inflight, 1);
    w1.lease.release();
    w1.lease.release();
    await settle();
    w2.lease!.release();
    w2.lease!.release();
    assert.equal(scheduler.snapshot().backends[0].inflight, 0);
  });

  it('removeBackend with a lease out: out of routing at once, release is harmless', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'other' }]);
    const lease = hold(['gpu/m']);
    scheduler.removeBackend('gpu');
    assert.deepEqual(
      scheduler.snapshot().backends.map((b) => b.name),
      ['other'],
    );
    const refused = call('refused', ['gpu/m']);
    await settle();
    assert.equal(refused.rejection?.reason, 'no_backend');
    lease.release();
    lease.release();
    assert.deepEqual(
      scheduler.snapshot().backends.map((b) => b.name),
      ['other'],
    );
    scheduler.upsertBackend({ name: 'gpu', cap: 1, paid: false, available: true });
    assert.equal(scheduler.snapshot().backends.find((b) => b.name === 'gpu')?.inflight, 0);
  });

  it('a backend re-added while old leases are out still counts them against its cap', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const old = hold(['gpu/m']);
    scheduler.removeBackend('gpu');
    scheduler.upsertBackend({ name: 'gpu', cap: 1, paid: false, available: true });
    const waiter = call('waiter', ['gpu/m']);
    await settle();
    assert.equal(waiter.lease, undefined, 'the old lease still holds the only slot');
    old.release();
    await settle();
    assert.equal(grantedOn(waiter), 'gpu/m');
  });

  it('waiters parked for a removed backend keep waiting for it to come back', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const lease = hold(['gpu/m']);
    const waiter = call('waiter', ['gpu/m']);
    scheduler.removeBackend('gpu');
    lease.release();
    await settle();
    assert.equal(waiter.lease, undefined);
    scheduler.upsertBackend({ name: 'gpu', cap: 1, paid: false, available: true });
    await settle();
    assert.equal(grantedOn(waiter), 'gpu/m');
  });
});

describe('scheduler: snapshot of parked tickets', () => {
  it('lists each waiter with its age and remaining time, oldest first, and counts per alias', async () => {
    const { clock, scheduler, call, hold } = schedulerHarness([{ name: 'a' }, { name: 'b' }]);
    hold(['a/x']);
    hold(['b/x']);
    call('one', ['a/qwen', 'b/qwen', 'b/llama'], { alias: 'chat', parkMs: 10_000 });
    clock.advance(1_000);
    call('two', ['b/llama'], { alias: 'chat', parkMs: 3_000 });
    call('three', ['a/sdxl'], { alias: 'image', parkMs: 3_000 });
    clock.advance(500);
    const { parked, parkedByAlias } = scheduler.snapshot();
    assert.deepEqual(parked, [
      { alias: 'chat', typeKeys: ['qwen', 'llama'], backends: ['a', 'b'], ageMs: 1_500, remainingMs: 8_500 },
      { alias: 'chat', typeKeys: ['llama'], backends: ['b'], ageMs: 500, remainingMs: 2_500 },
      { alias: 'image', typeKeys: ['sdxl'], backends: ['a'], ageMs: 500, remainingMs: 2_500 },
    ]);
    assert.deepEqual(parkedByAlias, { chat: 2, image: 1 });
    clock.advance(PARK_MS);
    await settle();
    assert.equal(scheduler.hasParked(), false);
  });
});
