/**
 * The paid spill rule: paid candidates only while the paid gate allows them and the best local
 * prediction exceeds `spillAfterMs` (0: as soon as no local slot is free, the rule of before),
 * the spill timer of a parked call, 'paid_budget' for a paid-only call, and the route words.
 * Fake clock throughout; no timing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SchedulerRejection } from '../src/scheduler/index.ts';
import { rejectionError } from '../src/upstream/refusals.ts';
import { candidates, settle } from './helpers/scheduler-harness.ts';
import { leased, scoreHarness, ticketFor, type Outcome } from './helpers/scheduler-score.ts';

/** A local box (measured: a call holds it `serviceS`) busy with one call, and a free paid box. */
async function busyLocal(serviceS: number) {
  const h = scoreHarness();
  h.add('local');
  h.add('cloud', { paid: true });
  h.measure('local', serviceS);
  const running = await h.take(['local/m']);
  return { ...h, running };
}

const both = ['local/m', 'cloud/m'];

/** The call is parked on the local box only, and gets it once the running call ends. */
async function waitsForLocalThenGetsIt(
  call: Outcome,
  scheduler: { snapshot(): { parked: { backends: string[] }[] } },
  running: { release(): void },
): Promise<void> {
  await settle();
  assert.equal(leased(call), undefined);
  assert.deepEqual(scheduler.snapshot().parked[0].backends, ['local']);
  running.release();
  await settle();
  assert.equal(leased(call)?.backend, 'local');
}

describe('spill: spillAfterMs 0 (default) is the rule of before', () => {
  it('paid as soon as no local slot is free, saying so', async () => {
    const { take } = await busyLocal(5);
    const lease = await take(both);
    assert.equal(lease.backend, 'cloud');
    assert.equal(lease.route, 'spill: no local slot free');
  });

  it('a call that only has paid candidates is no spill', async () => {
    const { take } = await busyLocal(5);
    assert.equal((await take(['cloud/m'])).route, undefined);
  });

  it('parked on both when the paid box is busy too; a freed paid slot takes it, saying why', async () => {
    const { take, start } = await busyLocal(5);
    const cloudCall = await take(['cloud/m']);
    const call = start(ticketFor(both));
    cloudCall.release();
    await settle();
    assert.equal(leased(call)?.backend, 'cloud');
    assert.equal(leased(call)?.route, 'spill: no local slot free');
  });
});

describe('spill: spillAfterMs above 0', () => {
  it('a local wait under the threshold parks for the local box; the free paid box is left alone', async () => {
    const { take, start, running, scheduler } = await busyLocal(5);
    const call = start(ticketFor(both, { spillAfterMs: 10_000 }));
    await settle();
    assert.equal(leased(call), undefined);
    assert.deepEqual(scheduler.snapshot().parked[0].backends, ['local'], 'not queued on the paid box');
    const other = await take(['cloud/m']);
    assert.equal(other.backend, 'cloud', 'the paid slot stays free for calls that may use it');
    other.release();
    await settle();
    assert.equal(leased(call), undefined, 'a freed paid slot is not handed to it');
    running.release();
    await settle();
    assert.equal(leased(call)?.backend, 'local');
    assert.equal(leased(call)?.route, undefined);
  });

  it('a local wait over the threshold spills at once, with the predicted wait in the route', async () => {
    const { take } = await busyLocal(41);
    const lease = await take(both, { spillAfterMs: 10_000 });
    assert.equal(lease.backend, 'cloud');
    assert.equal(lease.route, 'spill: local eta 41 s > 10 s');
  });

  it('a call that cannot park (parking off) goes paid rather than being refused, unless the gate is closed', async () => {
    const { take } = await busyLocal(5);
    const lease = await take(both, { spillAfterMs: 10_000, parkMs: 0 });
    assert.equal(lease.backend, 'cloud');
    assert.equal(lease.route, 'spill: no local slot free and no parking');
    lease.release();
    await assert.rejects(take(both, { spillAfterMs: 10_000, parkMs: 0, paidAllowed: () => false }), {
      reason: 'parking_off',
    });
  });

  it('a free local slot is always taken first', async () => {
    const { take, running } = await busyLocal(41);
    running.release();
    assert.equal((await take(both, { spillAfterMs: 10_000 })).backend, 'local');
  });

  it('the spill timer: parked that long, it widens onto the paid box and a free slot there takes it', async () => {
    const { start, clock, running } = await busyLocal(5);
    const call = start(ticketFor(both, { spillAfterMs: 15_000 }));
    clock.advance(14_999);
    await settle();
    assert.equal(leased(call), undefined);
    clock.advance(1);
    await settle();
    assert.equal(leased(call)?.backend, 'cloud');
    assert.equal(leased(call)?.route, 'spill: parked 15 s >= 15 s');
    running.release();
  });

  it('the spill timer keeps a call local while a box is predicted to serve it within the threshold again', async () => {
    const h = scoreHarness();
    h.add('local');
    h.add('cloud', { paid: true });
    h.measure('local', 14);
    h.fleet.hold('local', 'a', 'b'); // both loaded: no swap in the prediction
    const running = await h.take(['local/a']);
    // 14 s to the local slot, under the 15 s threshold: it parks for the local box
    const call = h.start(ticketFor(['local/b', 'cloud/b'], { spillAfterMs: 15_000 }));
    h.clock.advance(13_000);
    // a later call for the loaded model takes the freed slot first (the box keeps the work it ran)
    const sameModel = h.start(ticketFor(['local/a']));
    h.clock.advance(1_000);
    running.release();
    await settle();
    assert.equal(leased(sameModel)?.backend, 'local');
    // at 15 s the box is 13 s from free: within another 15 s, so the call stays local (at half it went paid)
    h.clock.advance(1_000);
    await settle();
    assert.equal(leased(call), undefined);
    // once the box overruns its mean, a prediction is no promise: the recheck sends it paid
    h.clock.advance(14_000);
    await settle();
    assert.equal(leased(call)?.backend, 'cloud');
    assert.match(leased(call)!.route!, /^spill: parked 29 s >= 15 s$/);
    leased(sameModel)!.release();
  });

  it('the spill timer keeps a call local while a box with a free slot only drains for its model', async () => {
    const h = scoreHarness();
    h.add('local', { cap: 2 });
    h.add('cloud', { paid: true });
    h.measure('local', 10); // the drain (half of 10 s over 2 slots) + a swap of 8 s: 13 s, under 15 s
    h.fleet.hold('local', 'a');
    const running = await h.take(['local/a']);
    const call = h.start(ticketFor(['local/b', 'cloud/b'], { spillAfterMs: 15_000 }));
    await settle();
    assert.equal(leased(call), undefined, 'b is not loaded beside a: it waits for the drain');
    h.clock.advance(15_000);
    await settle();
    assert.equal(leased(call), undefined, 'next in line at a box with a free slot: not sent paid past it');
    running.release();
    await settle();
    assert.equal(leased(call)?.backend, 'local');
    leased(call)?.release();
  });

  it('the spill timer frees local boxes held back by stickiness first: a free one wins over paid', async () => {
    const h = scoreHarness();
    h.add('prev');
    h.add('other');
    h.add('cloud', { paid: true });
    h.measure('prev', 10);
    h.measure('other', 10);
    const running = await h.take(['prev/m']);
    const call = h.start(ticketFor(['prev/m', 'other/m', 'cloud/m'], { stickTo: 'prev', spillAfterMs: 5_000 }));
    await settle();
    assert.equal(leased(call), undefined, "waits for its conversation's box");
    h.clock.advance(5_000);
    await settle();
    assert.equal(leased(call)?.backend, 'other');
    running.release();
  });

  it('the spill timer re-checks the paid gate: closed by then, the call keeps waiting for the local box', async () => {
    const { start, clock, running, scheduler } = await busyLocal(5);
    let allowed = true;
    const call = start(ticketFor(both, { spillAfterMs: 15_000, paidAllowed: () => allowed }));
    allowed = false;
    clock.advance(15_000);
    await waitsForLocalThenGetsIt(call, scheduler, running);
  });

  it('every timer is cleared whichever way the wait ends (grant, abort, timeout)', async () => {
    const { start, clock, running, scheduler } = await busyLocal(5);
    const pending = clock.pendingTimers;
    const granted = start(ticketFor(both, { spillAfterMs: 15_000 }));
    const controller = new AbortController();
    const aborted = start(ticketFor(both, { spillAfterMs: 15_000, signal: controller.signal }));
    const timedOut = start(ticketFor(both, { spillAfterMs: 5_000, parkMs: 10_000, paidAllowed: () => false }));
    assert.equal(clock.pendingTimers, pending + 6, 'a deadline and a spill timer each');
    running.release();
    controller.abort();
    await settle();
    assert.equal(leased(granted)?.backend, 'local');
    assert.equal(aborted.rejection?.reason, 'aborted');
    assert.equal(clock.pendingTimers, pending + 2, 'only the third call still waits');
    clock.advance(10_000);
    await settle();
    assert.equal(timedOut.rejection?.reason, 'park_timeout');
    assert.equal(clock.pendingTimers, pending);
    assert.equal(scheduler.hasParked(), false);
  });
});

describe('spill: the paid gate', () => {
  it('only paid candidates and the gate closed: paid_budget at once, nothing parked', async () => {
    const { take, scheduler } = await busyLocal(5);
    await assert.rejects(take(['cloud/m'], { paidAllowed: () => false, parkMs: 60_000 }), (error: unknown) => {
      assert.ok(error instanceof SchedulerRejection);
      assert.equal(error.reason, 'paid_budget');
      return true;
    });
    assert.equal(scheduler.hasParked(), false);
  });

  it('the gate closed with a local candidate: the call parks for the local box instead of failing', async () => {
    const { start, running, scheduler } = await busyLocal(5);
    const call = start(ticketFor(both, { paidAllowed: () => false }));
    await waitsForLocalThenGetsIt(call, scheduler, running);
  });

  it('a refresh does not bring paid backends to a call whose gate is closed', async () => {
    const { start, running, scheduler } = await busyLocal(5);
    scheduler.upsertBackend({ name: 'cloud2', cap: 1, paid: true, available: true });
    const refresh = () => candidates('local/m', 'cloud2/m');
    const call = start(ticketFor(['local/m'], { paidAllowed: () => false, refresh }));
    scheduler.refreshCandidates();
    await settle();
    assert.equal(leased(call), undefined);
    running.release();
  });

  it('failover (tryAcquireNow) follows the same rule', async () => {
    const { scheduler } = await busyLocal(5);
    const list = candidates(...both);
    assert.equal(scheduler.tryAcquireNow(list, new Set(), { spillAfterMs: 10_000 }), null);
    assert.equal(scheduler.tryAcquireNow(list, new Set(), { paidAllowed: () => false }), null);
    const lease = scheduler.tryAcquireNow(list, new Set(), { spillAfterMs: 2_000 });
    assert.equal(lease?.route, 'spill: local eta 5 s > 2 s');
  });

  it("'paid_budget' is a 429 insufficient_quota for the client", () => {
    const error = rejectionError(new SchedulerRejection('paid_budget', 'x'), 'big-model');
    assert.equal(error.status, 429);
    assert.equal(error.type, 'insufficient_quota');
    assert.equal(error.code, 'paid_budget_reached');
    assert.match(error.message, /paid budget/);
  });
});
