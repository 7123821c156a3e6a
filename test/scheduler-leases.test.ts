/**
 * Leases and what the scheduler shows of its waiters: idempotent release, releases on removed or
 * re-added backends, and the snapshot of parked tickets.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PARK_MS, grantedOn, schedulerHarness, settle } from './helpers/scheduler-harness.ts';

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
