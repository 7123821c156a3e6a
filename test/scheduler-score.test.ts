/**
 * The one score, predicted time to first token = slot wait + swap + prefill: the pure formula,
 * the order it gives, "a slot is not a model" at pick and at hand-off, stickiness, and the ETA
 * of parked calls. Fake clock throughout; no timing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_SERVICE_S,
  DEFAULT_SWAP_S,
  predict,
  PREFILL_PER_DECODE,
  sharingSlowdown,
  slotWaitSeconds,
  swapSeconds,
  type Residency,
} from '../src/scheduler/prediction.ts';
import type { BackendSlots } from '../src/scheduler/slots.ts';
import { settle } from './helpers/scheduler-harness.ts';
import { leased, MARGIN_MS, scoreHarness, ticketFor } from './helpers/scheduler-score.ts';

function slots(more: Partial<BackendSlots> & { cap?: number } = {}): BackendSlots {
  const { cap, ...rest } = more;
  return { spec: { name: 'b', cap: cap ?? 1, paid: false, available: true }, inflight: 0, removed: false, ...rest };
}
const measured = (serviceSeconds: number, prefillRate?: number) => ({ samples: 1, serviceSeconds, prefillRate });
const unknown: Residency = { model: undefined, lastTypeKey: undefined };
const warm: Residency = { model: true, lastTypeKey: undefined };
const cold: Residency = { model: false, lastTypeKey: undefined };

describe('score: the formula', () => {
  it('a free slot with the model resident (or unknown) waits nothing', () => {
    for (const residency of [unknown, warm]) {
      const p = predict(slots({ service: measured(20) }), 'm', undefined, residency, 0);
      assert.deepEqual([p.slotWait, p.swap, p.prefill, p.total, p.freeNow], [0, 0, 0, 0, true]);
    }
  });

  it('busy and resident: the calls beyond the free slots, each a mean service time, over the cap', () => {
    const box = slots({ cap: 2, inflight: 2, service: measured(12) });
    assert.equal(slotWaitSeconds(box, 'm', true, 0), 6); // (2 + 0 − 2 + 1) × 12 / 2
    assert.equal(slotWaitSeconds(box, 'm', true, 3), 24); // (2 + 3 − 2 + 1) × 12 / 2
    const unlimited = slots({ cap: 0, inflight: 9, service: measured(12) });
    assert.equal(slotWaitSeconds(unlimited, 'm', true, 5), 0, 'cap 0 = unlimited');
  });

  it('not resident: the box drains first (its calls and those queued), then the swap', () => {
    const box = slots({ cap: 2, inflight: 1, service: measured(10), swapSeconds: new Map([['m', 5]]) });
    const p = predict(box, 'm', undefined, cold, 2);
    assert.equal(p.freeNow, false, 'a free slot beside a running call is no slot for a model to load');
    assert.equal(p.slotWait, 15); // (1 + 2) × 10 / 2
    assert.equal(p.swap, 5);
    assert.equal(p.total, 20);
  });

  it('an idle box can load the model now: no slot wait, only the swap', () => {
    const p = predict(slots({ service: measured(10) }), 'm', undefined, cold, 0);
    assert.equal(p.freeNow, true);
    assert.equal(p.total, DEFAULT_SWAP_S);
  });

  it('swap: learnt for the model, else the mean of the box, else the default', () => {
    assert.equal(
      swapSeconds(
        slots({
          swapSeconds: new Map([
            ['m', 3],
            ['n', 9],
          ]),
        }),
        'm',
      ),
      3,
    );
    assert.equal(
      swapSeconds(
        slots({
          swapSeconds: new Map([
            ['a', 3],
            ['n', 9],
          ]),
          swapSecondsMean: 6,
        }),
        'm',
      ),
      6,
    );
    assert.equal(swapSeconds(slots(), 'm'), DEFAULT_SWAP_S);
  });

  it("prefill: prompt tokens over the learnt rate (the model's, else the box's); 0 when unknown", () => {
    const byModel = new Map([['m', measured(1, 2000)]]);
    assert.equal(predict(slots({ service: measured(1, 500), serviceByModel: byModel }), 'm', 4000, warm, 0).prefill, 2);
    assert.equal(predict(slots({ service: measured(1, 500), serviceByModel: byModel }), 'x', 4000, warm, 0).prefill, 8);
    assert.equal(predict(slots({ service: measured(1) }), 'm', 4000, warm, 0).prefill, 0, 'no rate learnt');
    assert.equal(predict(slots({ service: measured(1, 500) }), 'm', undefined, warm, 0).prefill, 0, 'no prompt size');
  });

  it('prefill never measured: PREFILL_PER_DECODE times the decode rate, so the box does not look instant', () => {
    const decodeOnly = { samples: 1, serviceSeconds: 1, decodeRate: 40 };
    const prefill = predict(slots({ service: decodeOnly }), 'm', 6000, warm, 0).prefill;
    assert.equal(prefill, 6000 / (40 * PREFILL_PER_DECODE));
  });

  it('a call that starts beside running calls prefills slower than on an idle box', () => {
    assert.equal(sharingSlowdown(0), 1);
    assert.ok(Math.abs(sharingSlowdown(1) - 2 / 1.6) < 1e-12, 'two calls go 1.6 times one: each at 0.8');
    const busy = predict(slots({ cap: 2, inflight: 1, service: measured(1, 1000) }), 'm', 1000, warm, 0);
    const idle = predict(slots({ cap: 2, inflight: 0, service: measured(1, 1000) }), 'm', 1000, warm, 0);
    assert.ok(busy.freeNow && idle.freeNow);
    assert.ok(busy.prefill > idle.prefill, `${busy.prefill} > ${idle.prefill}`);
  });

  it('a never-measured busy box counts DEFAULT_SERVICE_S per call ahead', () => {
    const p = predict(slots({ inflight: 1 }), 'm', undefined, unknown, 1);
    assert.equal(p.unmeasured, true);
    assert.equal(p.slotWait, 2 * DEFAULT_SERVICE_S);
  });
});

describe('score: the order', () => {
  it('a free box that holds the model before a faster free box that must load it', async () => {
    const { add, measure, fleet, take, scheduler } = scoreHarness();
    add('fast');
    add('warm');
    measure('fast', 2, 500);
    measure('warm', 2, 20);
    fleet.hold('fast', 'other').hold('warm', 'm');
    assert.equal((await take(['fast/m', 'warm/m'])).backend, 'warm');
    const order = scheduler.order(ticketFor(['fast/m', 'warm/m']).candidates);
    assert.deepEqual(
      order.map((c) => c.backend),
      ['warm', 'fast'],
    );
  });

  it('residency unknown: speed breaks the tie, and the box that last ran the model beats a faster one', async () => {
    const { add, measure, take } = scoreHarness();
    add('slow', { cap: 2 });
    add('fast', { cap: 2 });
    measure('slow', 2, 20);
    measure('fast', 2, 500);
    assert.equal((await take(['slow/m', 'fast/m'])).backend, 'fast', 'speed when nothing else differs');
    const onSlow = await take(['slow/n']);
    assert.equal(onSlow.backend, 'slow');
    assert.equal((await take(['fast/n', 'slow/n'])).backend, 'slow', 'affinity: slow last ran n');
  });

  it('a short wait on a fast box is not a free slot: the free one starts now', async () => {
    const { add, measure, take } = scoreHarness();
    add('fast');
    add('slow');
    measure('fast', 1, 500);
    measure('slow', 30, 10);
    await take(['fast/m']);
    assert.equal((await take(['fast/m', 'slow/m'])).backend, 'slow');
  });

  it('prefill counts: a long prompt goes to the box that reads prompts faster', async () => {
    const { add, scheduler, take } = scoreHarness();
    add('a');
    add('b');
    const learn = (name: string, promptRate: number) =>
      scheduler.recordSpeed(name, {
        status: 200,
        outputTokens: 100,
        seconds: 2,
        timings: { predictedN: 100, predictedMs: 1000, promptN: promptRate, promptMs: 1000 },
      });
    learn('a', 200);
    learn('b', 5000);
    assert.equal((await take(['a/m', 'b/m'], { promptTokens: 8000 })).backend, 'b');
  });

  it('never measured and free: tried once first, unless it would have to load the model', async () => {
    const { add, measure, take } = scoreHarness();
    add('known');
    add('new');
    measure('known', 1, 100);
    assert.equal((await take(['known/m', 'new/m'])).backend, 'new');
    const second = scoreHarness();
    second.add('known');
    second.add('new');
    second.measure('known', 1, 100);
    second.fleet.hold('new', 'other').hold('known', 'm');
    assert.equal((await second.take(['new/m', 'known/m'])).backend, 'known');
  });
});

describe('score: a slot is not a model', () => {
  it('a busy box holding m1 gives its second slot to an m1 call, never to an m2 call', async () => {
    const { add, fleet, take, start, scheduler } = scoreHarness();
    add('box', { cap: 2 });
    fleet.hold('box', 'm1');
    await take(['box/m1']);
    const m2 = start(ticketFor(['box/m2']));
    await settle();
    assert.equal(leased(m2), undefined, 'm2 parks');
    assert.equal(scheduler.snapshot().backends[0].inflight, 1);
    const m1 = await take(['box/m1']);
    assert.equal(m1.backend, 'box', 'm1 takes the free slot beside the running call');
  });

  it("while the box is still loading its latest lease's model, no other model starts beside it", async () => {
    const { add, fleet, take, start } = scoreHarness();
    add('box', { cap: 2 });
    fleet.hold('box', 'm1');
    await take(['box/m2']); // idle box: m2 may load; the fleet view still says m1
    const m1 = start(ticketFor(['box/m1'], { parkMs: 0 }));
    await settle();
    assert.equal(m1.rejection?.reason, 'parking_off');
  });

  it('a second call for the model the box is loading for its latest lease may start beside it', async () => {
    const { add, fleet, take } = scoreHarness();
    add('box', { cap: 2 });
    fleet.hold('box', 'm1');
    await take(['box/m2']);
    assert.equal((await take(['box/m2'])).backend, 'box', 'one load serves both');
  });

  it('hand-off on a busy box: a runnable waiter before an older one needing a load; else the slot idles', async () => {
    const { add, fleet, take, start, scheduler, clock } = scoreHarness();
    add('box', { cap: 2 });
    fleet.hold('box', 'm1');
    const first = await take(['box/m1']);
    const second = await take(['box/m1']);
    const needsLoad = start(ticketFor(['box/m2']));
    clock.advance(1000);
    const sameModel = start(ticketFor(['box/m1']));
    second.release();
    await settle();
    assert.equal(leased(sameModel)?.model, 'm1', 'the younger m1 waiter can start beside the running call');
    assert.equal(leased(needsLoad), undefined);
    leased(sameModel)!.release();
    await settle();
    assert.equal(leased(needsLoad), undefined, 'nothing runnable is parked: the slot stays free');
    assert.equal(scheduler.snapshot().backends[0].inflight, 1);
    first.release();
    await settle();
    assert.equal(leased(needsLoad)?.model, 'm2', 'the box drained: the load may start');
  });

  it('an overdue waiter gets the slot even if its model must load (bounded starvation)', async () => {
    const { add, fleet, take, start, clock } = scoreHarness();
    add('box', { cap: 2 });
    fleet.hold('box', 'm1');
    await take(['box/m1']);
    const second = await take(['box/m1']);
    const needsLoad = start(ticketFor(['box/m2']));
    clock.advance(MARGIN_MS + 1);
    const sameModel = start(ticketFor(['box/m1']));
    second.release();
    await settle();
    assert.equal(leased(needsLoad)?.model, 'm2');
    assert.equal(leased(sameModel), undefined);
  });
});

describe('score: stickiness', () => {
  it("the conversation's box within the margin of the best other is chosen, route sticky", async () => {
    const { add, measure, take } = scoreHarness();
    add('fast');
    add('prev');
    measure('fast', 1, 500);
    measure('prev', 1, 20);
    const lease = await take(['fast/m', 'prev/m'], { stickTo: 'prev' });
    assert.equal(lease.backend, 'prev');
    assert.equal(lease.route, 'sticky');
    const plain = await take(['fast/m', 'prev/m']);
    assert.equal(plain.route, undefined, 'a plain best pick says nothing');
  });

  it('beyond the margin, the normal order', async () => {
    const { add, measure, fleet, take } = scoreHarness();
    add('fast');
    add('prev');
    measure('fast', 1, 500);
    measure('prev', 100, 20);
    fleet.hold('prev', 'other').hold('fast', 'm');
    await take(['prev/other']);
    // prev: busy 100 s, then a load: far beyond 30 s over the free 'fast'
    const lease = await take(['fast/m', 'prev/m'], { stickTo: 'prev' });
    assert.equal(lease.backend, 'fast');
    assert.equal(lease.route, undefined);
  });

  it('busy within the margin while another is free: waits for it alone, then widens after the margin', async () => {
    const { add, measure, take, start, clock } = scoreHarness();
    add('other');
    add('prev');
    measure('other', 1, 500);
    measure('prev', 10, 50);
    const running = await take(['prev/m']);
    const call = start(ticketFor(['other/m', 'prev/m'], { stickTo: 'prev' }));
    await settle();
    assert.equal(leased(call), undefined, 'waits 10 s for its box rather than taking the free one');
    running.release();
    await settle();
    assert.equal(leased(call)?.backend, 'prev');
    assert.equal(leased(call)?.route, 'sticky');
    leased(call)!.release();

    const again = await take(['prev/m']);
    const late = start(ticketFor(['other/m', 'prev/m'], { stickTo: 'prev' }));
    clock.advance(MARGIN_MS);
    await settle();
    assert.equal(leased(late)?.backend, 'other', 'after the margin the other box takes it');
    again.release();
  });
});

describe('score: ETA of parked calls', () => {
  it("queuePosition, snapshot and a park timeout's Retry-After use the predicted wait", async () => {
    const { add, measure, take, start, scheduler, clock } = scoreHarness();
    add('box');
    measure('box', 20);
    await take(['box/m']);
    const first = ticketFor(['box/m'], { user: { key: 'u:1', share: 1, maxInflight: 0 } });
    const second = ticketFor(['box/m'], { parkMs: 5000 });
    start(first);
    const late = start(second);
    assert.deepEqual(scheduler.queuePosition(first), { position: 1, waitedMs: 0, etaS: 20 });
    assert.deepEqual(scheduler.queuePosition(second), { position: 2, waitedMs: 0, etaS: 40 });
    const parked = scheduler.snapshot().parked;
    assert.deepEqual(
      parked.map((p) => [p.etaS, p.user]),
      [
        [20, 'u:1'],
        [40, undefined],
      ],
    );
    clock.advance(5000);
    await settle();
    assert.equal(late.rejection?.reason, 'park_timeout');
    assert.equal(late.rejection?.retryAfter, 40);
  });

  it('no ETA (and Retry-After 2) while the box was never measured', async () => {
    const { add, take, start, scheduler, clock } = scoreHarness();
    add('box');
    await take(['box/m']);
    const ticket = ticketFor(['box/m'], { parkMs: 1000 });
    const call = start(ticket);
    assert.equal(scheduler.queuePosition(ticket)?.etaS, undefined);
    clock.advance(1000);
    await settle();
    assert.equal(call.rejection?.retryAfter, 2);
  });
});
