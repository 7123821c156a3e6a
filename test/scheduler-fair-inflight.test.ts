/**
 * `max_inflight` on the fake clock: a user's calls over its cap park even when a slot is free
 * (never refused while parking is on), other users take the free slots meanwhile, a capped
 * user's waiters are passed over at hand-off (overdue or not), and the release of one of its
 * leases hands off on every backend it waits on. Also GPU groups: the fair order across the
 * group's members.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TicketUser } from '../src/scheduler/index.ts';
import {
  AFFINITY_MAX_WAIT_MS,
  candidates,
  grantedOn,
  leaseOf,
  schedulerHarness,
  settle,
  type FleetBackend,
} from './helpers/scheduler-harness.ts';

const user = (key: string, more: Partial<TicketUser> = {}): TicketUser => ({ key, share: 1, maxInflight: 0, ...more });
const CAPPED = user('u:capped', { maxInflight: 1 });
const OTHER = user('u:other');
/** An LLM box and a ComfyUI on one GPU. */
const GROUP_FLEET: FleetBackend[] = [
  { name: 'llm', group: 'box' },
  { name: 'comfy', group: 'box', kind: 'media' },
];

describe('max_inflight: a user over its cap parks', () => {
  it('the second call parks while a slot is free, another user takes it, and it runs when the first ends', async () => {
    const { scheduler, call } = schedulerHarness([{ name: 'gpu1' }, { name: 'gpu2' }]);
    const first = call('first', ['gpu1/m', 'gpu2/m'], { user: CAPPED });
    const second = call('second', ['gpu1/m', 'gpu2/m'], { user: CAPPED });
    await settle();
    assert.ok(first.lease, 'the first runs');
    assert.ok(!second.lease && !second.rejection, 'the second parks, not refused');
    const free = scheduler.snapshot().backends.filter((b) => b.inflight === 0);
    assert.equal(free.length, 1, 'a slot is free all the same');
    assert.deepEqual(
      scheduler.snapshot().parked.map((p) => p.user),
      ['u:capped'],
    );
    const other = call('other', ['gpu1/m', 'gpu2/m'], { user: OTHER });
    await settle();
    assert.ok(other.lease, 'another user’s call takes the free slot');
    leaseOf(first)!.release();
    await settle();
    assert.equal(leaseOf(second)?.backend, first.lease!.backend, 'the second runs on the slot the first freed');
    assert.equal(scheduler.hasParked(), false);
  });

  it('the release of a capped user’s lease hands off on the other backends it waits on', async () => {
    const { call } = schedulerHarness([{ name: 'gpu1' }, { name: 'gpu2' }]);
    const first = call('first', ['gpu1/m'], { user: CAPPED });
    const second = call('second', ['gpu2/m'], { user: CAPPED });
    await settle();
    assert.ok(first.lease && !second.lease, 'gpu2 is free, but the user is at its cap');
    first.lease.release();
    await settle();
    assert.equal(grantedOn(second), 'gpu2/m', 'served on gpu2 when the lease on gpu1 ended');
  });

  it('a capped user’s waiter is passed over at hand-off, even overdue, and served once below its cap', async () => {
    const { clock, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'side' }]);
    const busy = hold(['gpu/m'], OTHER);
    const running = hold(['side/m'], CAPPED);
    const capped = call('capped', ['gpu/m'], { user: CAPPED });
    clock.advance(AFFINITY_MAX_WAIT_MS + 1);
    const younger = call('younger', ['gpu/m'], { user: user('u:third') });
    busy.release();
    await settle();
    assert.ok(younger.lease && !capped.lease, 'the overdue waiter of a capped user does not get the slot');
    running.release();
    await settle();
    assert.ok(!capped.lease, 'gpu is busy again: it waits for it');
    leaseOf(younger)!.release();
    await settle();
    assert.equal(grantedOn(capped), 'gpu/m');
  });

  it('a slot with only capped waiters is taken by a fresh call of another user', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'side' }]);
    hold(['side/m'], CAPPED);
    const capped = call('capped', ['gpu/m'], { user: CAPPED });
    await settle();
    assert.ok(!capped.lease);
    const fresh = scheduler.tryAcquireNow(candidates('gpu/m'), new Set(), { user: OTHER });
    assert.equal(fresh?.backend, 'gpu');
  });

  it('failover (tryAcquireNow) gives a capped user nothing; the anonymous user has no cap', async () => {
    const { scheduler, hold } = schedulerHarness([{ name: 'gpu1' }, { name: 'gpu2' }]);
    hold(['gpu1/m'], CAPPED);
    assert.equal(scheduler.tryAcquireNow(candidates('gpu2/m'), new Set(), { user: CAPPED }), null);
    assert.equal(scheduler.tryAcquireNow(candidates('gpu2/m'), new Set())?.backend, 'gpu2');
  });

  it('with parking off, a call over the cap is refused as parking_off, saying why', async () => {
    const { call, hold } = schedulerHarness([{ name: 'gpu1' }, { name: 'gpu2' }]);
    hold(['gpu1/m'], CAPPED);
    const refused = call('refused', ['gpu2/m'], { user: CAPPED, parkMs: 0 });
    await settle();
    assert.equal(refused.rejection?.reason, 'parking_off');
    assert.match(refused.rejection!.message, /1 in flight/);
  });

  it('a cap of 2 lets two run at once; a released lease frees one place', async () => {
    const two = user('u:two', { maxInflight: 2 });
    const { call } = schedulerHarness([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    const calls = ['x', 'y', 'z'].map((name) => call(name, ['a/m', 'b/m', 'c/m'], { user: two }));
    await settle();
    assert.deepEqual(
      calls.map((c) => Boolean(c.lease)),
      [true, true, false],
    );
    leaseOf(calls[1])!.release();
    await settle();
    assert.ok(calls[2].lease);
  });

  it('a capped user’s waiters that time out or leave leave nothing behind', async () => {
    const { clock, scheduler, call, hold } = schedulerHarness([{ name: 'gpu1' }, { name: 'gpu2' }]);
    const running = hold(['gpu1/m'], CAPPED);
    const controller = new AbortController();
    const leaves = call('leaves', ['gpu2/m'], { user: CAPPED, signal: controller.signal });
    const times = call('times', ['gpu2/m'], { user: CAPPED, parkMs: 1_000 });
    controller.abort();
    clock.advance(1_000);
    await settle();
    assert.equal(leaves.rejection?.reason, 'aborted');
    assert.equal(times.rejection?.reason, 'park_timeout');
    assert.equal(scheduler.hasParked(), false);
    running.release();
    const next = call('next', ['gpu1/m'], { user: CAPPED });
    await settle();
    assert.ok(next.lease, 'below its cap again');
  });
});

describe('fair share across a GPU group', () => {
  it('a freed group slot goes to the user with less service, whichever member it waits on', async () => {
    const { clock, scheduler, call, hold } = schedulerHarness(GROUP_FLEET);
    scheduler.configureGroups({ box: { cap: 1 } });
    const heavy = user('u:heavy');
    const running = hold(['llm/m'], heavy);
    const heavyCalls = Array.from({ length: 3 }, (_, i) => call(`h${i}`, ['llm/m'], { user: heavy }));
    clock.advance(100);
    const light = call('light', ['comfy/sdxl'], { user: user('u:light') });
    clock.advance(5_000);
    running.release();
    await settle();
    assert.equal(grantedOn(light), 'comfy/sdxl', 'the light user’s job, not the heavy user’s older calls');
    assert.ok(heavyCalls.every((c) => !c.lease));
  });

  it('one user in a group: affinity and age as before', async () => {
    const { scheduler, call, hold } = schedulerHarness(GROUP_FLEET);
    scheduler.configureGroups({ box: { cap: 1 } });
    const running = hold(['llm/m']);
    const older = call('older', ['comfy/sdxl']);
    const sameModel = call('same', ['llm/m']);
    running.release();
    await settle();
    assert.ok(sameModel.lease && !older.lease, 'no model reload and no GPU switch first');
  });

  it('a capped user’s waiter on a group member is passed over', async () => {
    const { scheduler, call, hold } = schedulerHarness([
      { name: 'llm', group: 'box' },
      { name: 'comfy', group: 'box', kind: 'media' },
      { name: 'side' },
    ]);
    scheduler.configureGroups({ box: { cap: 1 } });
    hold(['side/m'], CAPPED);
    const running = hold(['llm/m'], OTHER);
    const capped = call('capped', ['llm/m'], { user: CAPPED });
    const other = call('other', ['comfy/sdxl'], { user: OTHER });
    running.release();
    await settle();
    assert.ok(other.lease && !capped.lease);
  });
});
