/**
 * Fair share between users, on the fake clock: a freed slot goes to the user with the least
 * service per share (seconds held, chat and media alike), FIFO with model affinity within a
 * user; idle time banks no credit; `max_inflight` parks a user's calls over its cap while other
 * users take the free slots; GPU groups share fairly across their members.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Lease, TicketUser } from '../src/scheduler/index.ts';
import {
  AFFINITY_MAX_WAIT_MS,
  leaseOf,
  schedulerHarness,
  settle,
  type FleetBackend,
  type TrackedCall,
} from './helpers/scheduler-harness.ts';
import type { FakeClock } from './helpers/fake-clock.ts';

const user = (key: string, more: Partial<TicketUser> = {}): TicketUser => ({ key, share: 1, maxInflight: 0, ...more });
const A = user('u:a');
const B = user('u:b');
const X = user('u:x');
/** Two LLM boxes and a ComfyUI. */
const MIXED_FLEET: FleetBackend[] = [{ name: 'gpu' }, { name: 'chat' }, { name: 'comfy', kind: 'media' }];
/** Long enough for every wait in these tests. */
const LONG_PARK_MS = 3_600_000;

/**
 * One backend of cap 1 serving `calls` one at a time: `current` is held `holdMs`, then released;
 * the call it went to is held next, and so on for `grants` grants. The names in grant order.
 */
async function serveOneAtATime(clock: FakeClock, current: Lease, calls: TrackedCall[], grants: number, holdMs = 5_000) {
  const order: string[] = [];
  for (let i = 0; i < grants; i++) {
    clock.advance(holdMs);
    current.release();
    await settle();
    const next = calls.find((c) => c.lease && !order.includes(c.name));
    assert.ok(next, `grant ${i}: a waiter got the slot`);
    order.push(next.name);
    current = leaseOf(next)!;
  }
  return { order, current };
}

describe('fair share: order between users', () => {
  it('A parks 10, B parks 2 later: B is served after at most one more of A, not after all 10', async () => {
    const { clock, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m'], A);
    const calls = Array.from({ length: 10 }, (_, i) => call(`a${i}`, ['gpu/m'], { user: A, parkMs: LONG_PARK_MS }));
    clock.advance(100);
    for (const name of ['b0', 'b1']) calls.push(call(name, ['gpu/m'], { user: B, parkMs: LONG_PARK_MS }));
    const { order } = await serveOneAtATime(clock, running, calls, 12);
    const b0 = order.indexOf('b0');
    const b1 = order.indexOf('b1');
    assert.ok(b0 <= 1, `b0 served ${b0 + 1}th: ${order.join(',')}`);
    assert.ok(b1 - b0 <= 2, `b1 at most one of A's after b0: ${order.join(',')}`);
    assert.deepEqual(
      order.filter((n) => n.startsWith('a')),
      calls.slice(0, 10).map((c) => c.name),
      'FIFO within A',
    );
  });

  it('the same calls from one user stay FIFO (one user: the order of before)', async () => {
    const { clock, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m'], A);
    const calls = Array.from({ length: 10 }, (_, i) => call(`a${i}`, ['gpu/m'], { user: A, parkMs: LONG_PARK_MS }));
    clock.advance(100);
    for (const name of ['b0', 'b1']) calls.push(call(name, ['gpu/m'], { user: A, parkMs: LONG_PARK_MS }));
    const { order } = await serveOneAtATime(clock, running, calls, 12);
    assert.deepEqual(
      order,
      calls.map((c) => c.name),
    );
  });

  it('shares 2:1 give about twice the service to the share-2 user', async () => {
    const { clock, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const heavy = user('u:heavy', { share: 2 });
    const light = user('u:light', { share: 1 });
    const running = hold(['gpu/m'], X);
    const calls = [
      ...Array.from({ length: 30 }, (_, i) => call(`h${i}`, ['gpu/m'], { user: heavy, parkMs: LONG_PARK_MS })),
      ...Array.from({ length: 30 }, (_, i) => call(`l${i}`, ['gpu/m'], { user: light, parkMs: LONG_PARK_MS })),
    ];
    const { order } = await serveOneAtATime(clock, running, calls, 30, 1_000);
    const heavyServed = order.filter((n) => n.startsWith('h')).length;
    const lightServed = order.length - heavyServed;
    const counts = `heavy ${heavyServed}, light ${lightServed}: ${order.join(',')}`;
    assert.ok(Math.abs(heavyServed - 2 * lightServed) <= 3, counts);
  });

  it('shares weigh seconds, not calls: one user’s long calls count against it', async () => {
    const { clock, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m'], X);
    const calls = [
      ...Array.from({ length: 6 }, (_, i) => call(`a${i}`, ['gpu/m'], { user: A, parkMs: LONG_PARK_MS })),
      ...Array.from({ length: 6 }, (_, i) => call(`b${i}`, ['gpu/m'], { user: B, parkMs: LONG_PARK_MS })),
    ];
    // A's calls hold the slot 9 s, B's 1 s: B gets about nine calls per one of A's
    const order: string[] = [];
    let current = running;
    for (let i = 0; i < 8; i++) {
      current.release();
      await settle();
      const next = calls.find((c) => c.lease && !order.includes(c.name))!;
      order.push(next.name);
      current = leaseOf(next)!;
      clock.advance(next.name.startsWith('a') ? 9_000 : 1_000);
    }
    const aServed = order.filter((n) => n.startsWith('a')).length;
    assert.ok(aServed <= 2, `A served ${aServed} of 8: ${order.join(',')}`);
  });

  it('idle time banks no credit: a user that was away starts level with the active ones', async () => {
    const { clock, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m'], A);
    const calls = Array.from({ length: 10 }, (_, i) => call(`a${i}`, ['gpu/m'], { user: A, parkMs: LONG_PARK_MS }));
    const first = await serveOneAtATime(clock, running, calls, 5, 10_000);
    assert.deepEqual(first.order, ['a0', 'a1', 'a2', 'a3', 'a4']);
    // B was idle for the 50 s A was served: it does not get its 4 calls all before A's next
    calls.push(...Array.from({ length: 4 }, (_, i) => call(`b${i}`, ['gpu/m'], { user: B, parkMs: LONG_PARK_MS })));
    const { order } = await serveOneAtATime(clock, first.current, calls.slice(5), 6, 10_000);
    assert.deepEqual(order, ['b0', 'a5', 'b1', 'a6', 'b2', 'a7']);
  });

  it('affinity stays within the chosen user: its waiter for the loaded model first', async () => {
    const { clock, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m1'], X);
    clock.advance(5_000);
    const older = call('a-m2', ['gpu/m2'], { user: A, parkMs: LONG_PARK_MS });
    const sameModel = call('a-m1', ['gpu/m1'], { user: A, parkMs: LONG_PARK_MS });
    running.release();
    await settle();
    assert.ok(sameModel.lease && !older.lease, 'A is the only user waiting: its m1 call goes first');
  });

  it('between users of equal standing, the one whose call needs no reload', async () => {
    const { call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m1'], X);
    const older = call('a-m2', ['gpu/m2'], { user: A, parkMs: LONG_PARK_MS });
    const sameModel = call('b-m1', ['gpu/m1'], { user: B, parkMs: LONG_PARK_MS });
    running.release();
    await settle();
    assert.ok(sameModel.lease && !older.lease);
  });

  it('overdue beats affinity within a user, not the fair order between users', async () => {
    const { clock, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    const running = hold(['gpu/m1'], A);
    const overdue = call('a-m2', ['gpu/m2'], { user: A, parkMs: LONG_PARK_MS });
    clock.advance(AFFINITY_MAX_WAIT_MS + 1);
    const sameModel = call('a-m1', ['gpu/m1'], { user: A, parkMs: LONG_PARK_MS });
    const other = call('b-m3', ['gpu/m3'], { user: B, parkMs: LONG_PARK_MS });
    running.release(); // A held the slot 10 s: B, level with A before that, has had less
    await settle();
    assert.ok(other.lease && !overdue.lease && !sameModel.lease, 'B first');
    clock.advance(1_000);
    leaseOf(other)!.release();
    await settle();
    assert.ok(overdue.lease && !sameModel.lease, 'then A’s overdue m2 call before its m1 one');
  });
});

describe('fair share: chat and media charged alike', () => {
  // A and B park for the LLM box `gpu` (A first); before that, each held a lease elsewhere for
  // a while: one a media job on `comfy`, the other a chat call on `chat`. The one with fewer
  // seconds held gets `gpu` first, whichever kind its seconds were.
  const cases = [
    { name: 'A’s 30 s media job counts like chat', aOn: 'comfy/sdxl', aMs: 30_000, bOn: 'chat/m', bMs: 5_000 },
    { name: 'A’s 30 s chat call counts like media', aOn: 'chat/m', aMs: 30_000, bOn: 'comfy/sdxl', bMs: 5_000 },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { clock, call, hold } = schedulerHarness(MIXED_FLEET);
      const busy = hold(['gpu/m'], X);
      const aLease = hold([c.aOn], A);
      const bLease = hold([c.bOn], B);
      const aWaits = call('a', ['gpu/m'], { user: A, parkMs: LONG_PARK_MS });
      const bWaits = call('b', ['gpu/m'], { user: B, parkMs: LONG_PARK_MS });
      clock.advance(c.bMs);
      bLease.release();
      clock.advance(c.aMs - c.bMs);
      aLease.release();
      busy.release();
      await settle();
      assert.ok(bWaits.lease && !aWaits.lease, 'B, with fewer seconds held, goes first although A is older');
    });
  }

  it('a running lease is charged its learnt time at grant: seconds per job for media, per call for chat', async () => {
    const { call, hold, scheduler } = schedulerHarness(MIXED_FLEET);
    scheduler.recordJobSeconds('comfy', 'sdxl', 60);
    scheduler.recordSpeed('chat', { status: 200, outputTokens: 16, seconds: 10 });
    const busy = hold(['gpu/m'], X);
    hold(['comfy/sdxl'], A); // still running: charged 60 s so far
    hold(['chat/m'], B); // still running: charged 10 s so far
    const aWaits = call('a', ['gpu/m'], { user: A, parkMs: LONG_PARK_MS });
    const bWaits = call('b', ['gpu/m'], { user: B, parkMs: LONG_PARK_MS });
    busy.release();
    await settle();
    assert.ok(bWaits.lease && !aWaits.lease, 'A’s running 60 s job weighs more than B’s running 10 s call');
  });
});
