/**
 * Parking and hand-off: FIFO waits, the three hand-off rules, no overtaking, fairness across
 * aliases, and fleet changes that hand free slots to waiters.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type BackendSlotSpec } from '../src/scheduler/index.ts';
import {
  AFFINITY_MAX_WAIT_MS,
  candidates,
  grantedOn,
  leaseOf,
  schedulerHarness,
  settle,
  type FleetBackend,
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
