/** Refusals of a parked or parking call: park timeout, parking off, queue full, disconnects and aborts. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SchedulerRejection } from '../src/scheduler/index.ts';
import { schedulerHarness, settle, type TrackedCall } from './helpers/scheduler-harness.ts';

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
