/**
 * refreshCandidates(): parked calls re-resolve their candidates when model lists change, join
 * the queues of backends they did not have in their place by age, and get free slots at once.
 * Also the ordered insert of LazyFifo that keeps those queues oldest-first.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LazyFifo } from '../src/scheduler/lazy-fifo.ts';
import type { Candidate } from '../src/scheduler/index.ts';
import {
  AFFINITY_MAX_WAIT_MS,
  PARK_MS,
  grantedOn,
  schedulerHarness,
  settle,
  type FleetBackend,
} from './helpers/scheduler-harness.ts';

describe('refreshCandidates: a parked call uses a backend that gained its model at once', () => {
  const cases: {
    name: string;
    /** Fleet besides the busy 'gpu'. */
    fleet: FleetBackend[];
    refresh: string[];
    expect: string;
  }[] = [
    {
      name: 'a free backend in the fleet starts listing the model',
      fleet: [{ name: 'spare' }],
      refresh: ['gpu/m', 'spare/m-q8'],
      expect: 'spare/m-q8',
    },
    {
      name: 'the first of several new candidates on a backend is the type key it runs',
      fleet: [{ name: 'spare' }],
      refresh: ['spare/m-q4', 'spare/m-q8'],
      expect: 'spare/m-q4',
    },
    {
      name: 'unlimited new backend, paid or not',
      fleet: [{ name: 'cloud', cap: 0, paid: true }],
      refresh: ['cloud/m'],
      expect: 'cloud/m',
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, ...c.fleet]);
      hold(['gpu/m']);
      const waiter = call('waiter', ['gpu/m'], { refresh: c.refresh });
      await settle();
      assert.equal(waiter.lease, undefined, 'parks on the busy gpu');
      scheduler.refreshCandidates();
      await settle();
      assert.equal(grantedOn(waiter), c.expect);
      assert.equal(waiter.refreshes, 1);
      assert.equal(scheduler.hasParked(), false);
    });
  }

  it('a backend the fleet does not know yet is used once it is added', async () => {
    const { scheduler, call, hold, addBackend } = schedulerHarness([{ name: 'gpu' }]);
    hold(['gpu/m']);
    const waiter = call('waiter', ['gpu/m'], { refresh: ['gpu/m', 'later/m'] });
    scheduler.refreshCandidates();
    await settle();
    assert.equal(waiter.lease, undefined);
    assert.deepEqual(scheduler.snapshot().parked[0].backends, ['gpu', 'later']);
    addBackend({ name: 'later' });
    await settle();
    assert.equal(grantedOn(waiter), 'later/m');
  });

  it('an unavailable new backend serves the waiter when it comes back up', async () => {
    const { scheduler, call, hold, addBackend } = schedulerHarness([
      { name: 'gpu' },
      { name: 'spare', available: false },
    ]);
    hold(['gpu/m']);
    const waiter = call('waiter', ['gpu/m'], { refresh: ['spare/m'] });
    scheduler.refreshCandidates();
    await settle();
    assert.equal(waiter.lease, undefined);
    addBackend({ name: 'spare' });
    await settle();
    assert.equal(grantedOn(waiter), 'spare/m');
  });

  it('a busy new backend hands its next free slot to the widened waiter', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'spare' }]);
    hold(['gpu/m']);
    const onSpare = hold(['spare/other']);
    const waiter = call('waiter', ['gpu/m'], { refresh: ['spare/m'] });
    scheduler.refreshCandidates();
    await settle();
    assert.equal(waiter.lease, undefined);
    onSpare.release();
    await settle();
    assert.equal(grantedOn(waiter), 'spare/m');
  });

  it('snapshot lists the added backends and type keys after the original ones', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'spare' }]);
    hold(['gpu/m']);
    hold(['spare/busy']);
    call('waiter', ['gpu/m'], { refresh: ['spare/m-q8', 'gpu/m-other', 'new/m'] });
    scheduler.refreshCandidates();
    const [parked] = scheduler.snapshot().parked;
    assert.deepEqual(parked.backends, ['gpu', 'spare', 'new']);
    assert.deepEqual(parked.typeKeys, ['m', 'm-q8']);
  });
});

describe('refreshCandidates: widened waiters keep their place by age', () => {
  // spare (cap 1) is busy. `eldest` and `youngest` wait on spare from the start; `old` and
  // `young` wait on gpu and are widened onto spare in between them. spare then serves one
  // call per release: it must be strictly oldest first.
  const cases: { name: string; typeKeys: Record<string, string> }[] = [
    {
      name: 'same model: the (backend, type key) queue is in age order',
      typeKeys: { eldest: 'm', old: 'm', young: 'm', youngest: 'm' },
    },
    {
      name: 'different models: the backend queue is in age order',
      typeKeys: { eldest: 'm-e', old: 'm-o', young: 'm-y', youngest: 'm-z' },
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'spare' }]);
      hold(['gpu/busy']);
      let running = hold(['spare/busy']);
      const { eldest: e, old: o, young: y, youngest: z } = c.typeKeys;
      const calls = [
        call('eldest', [`spare/${e}`]),
        call('old', [`gpu/${o}`], { refresh: [`spare/${o}`] }),
        call('young', [`gpu/${y}`], { refresh: [`spare/${y}`] }),
        call('youngest', [`spare/${z}`]),
      ];
      scheduler.refreshCandidates();
      await settle();
      assert.ok(
        calls.every((x) => !x.lease),
        'spare is busy: nobody served yet',
      );
      const order: string[] = [];
      for (let i = 0; i < calls.length; i++) {
        running.release();
        await settle();
        const served = calls.filter((x) => x.lease && !order.includes(x.name));
        assert.equal(served.length, 1, `release ${i + 1} serves exactly one call`);
        order.push(served[0].name);
        running = served[0].lease!;
      }
      assert.deepEqual(order, ['eldest', 'old', 'young', 'youngest']);
    });
  }

  it('a widened waiter is served before younger ones on every one of its backends', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'a' }, { name: 'b' }]);
    hold(['gpu/m']);
    const onA = hold(['a/m']);
    const onB = hold(['b/m']);
    const widened = call('widened', ['gpu/m'], { refresh: ['a/m', 'b/m'] });
    const onlyA = call('only-a', ['a/m']);
    const onlyB = call('only-b', ['b/m']);
    scheduler.refreshCandidates();
    onB.release();
    await settle();
    assert.equal(grantedOn(widened), 'b/m');
    onA.release(); // widened is served already: the slot goes to the next in line on a
    await settle();
    assert.equal(grantedOn(onlyA), 'a/m');
    assert.equal(onlyB.lease, undefined);
  });
});

describe('refreshCandidates: the hand-off rules apply on the widened backend', () => {
  // spare (cap 1) last ran `lastRan` and frees after the refresh; gpu stays busy throughout.
  const cases: {
    name: string;
    lastRan: string;
    waiters: { name: string; asks: string[]; refresh?: string[]; advanceAfter?: number }[];
    expect: string;
  }[] = [
    {
      name: '(2) affinity: a younger widened waiter running the same model beats the oldest',
      lastRan: 'm1',
      waiters: [
        { name: 'old', asks: ['spare/m2'] },
        { name: 'widened', asks: ['gpu/m1'], refresh: ['spare/m1'] },
      ],
      expect: 'widened/spare/m1',
    },
    {
      name: '(2) affinity picks the oldest same-model waiter, widened or not',
      lastRan: 'm1',
      waiters: [
        { name: 'old', asks: ['spare/m2'] },
        { name: 'widened', asks: ['gpu/m1'], refresh: ['spare/m1'] },
        { name: 'same-model', asks: ['spare/m1'] },
      ],
      expect: 'widened/spare/m1',
    },
    {
      name: '(1) an overdue widened waiter beats affinity of a younger one queued there first',
      lastRan: 'm1',
      waiters: [
        { name: 'overdue', asks: ['gpu/m2'], refresh: ['spare/m2'], advanceAfter: AFFINITY_MAX_WAIT_MS + 1 },
        { name: 'same-model', asks: ['spare/m1'] },
      ],
      expect: 'overdue/spare/m2',
    },
    {
      name: '(3) the oldest: a widened waiter older than everyone queued there',
      lastRan: 'm9',
      waiters: [
        { name: 'widened', asks: ['gpu/m2'], refresh: ['spare/m2'] },
        { name: 'queued', asks: ['spare/m3'] },
      ],
      expect: 'widened/spare/m2',
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { clock, scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'spare' }]);
      hold(['gpu/busy']);
      const running = hold([`spare/${c.lastRan}`]);
      const calls = c.waiters.map((w) => {
        const parked = call(w.name, w.asks, { refresh: w.refresh });
        clock.advance(w.advanceAfter ?? 1);
        return parked;
      });
      scheduler.refreshCandidates();
      running.release();
      await settle();
      const served = calls.filter((x) => x.lease);
      assert.deepEqual(
        served.map((x) => `${x.name}/${grantedOn(x)}`),
        [c.expect],
      );
    });
  }
});

describe('refreshCandidates: what changes nothing', () => {
  const cases: { name: string; refresh: string[] | (() => Candidate[]) }[] = [
    { name: 'a refresh that returns no candidates (the vanished ones stay)', refresh: [] },
    {
      name: 'a refresh that throws',
      refresh: () => {
        throw new Error('routing exploded');
      },
    },
    { name: 'a refresh that returns a non-array', refresh: () => undefined as unknown as Candidate[] },
    {
      name: 'a refresh listing only backends the waiter has (new type keys there are ignored)',
      refresh: ['gpu/m-q8', 'gpu/m'],
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'spare' }]);
      const running = hold(['gpu/m']);
      const waiter = call('waiter', ['gpu/m'], { refresh: c.refresh });
      const before = scheduler.snapshot();
      scheduler.refreshCandidates();
      await settle();
      assert.equal(waiter.refreshes, 1);
      assert.equal(waiter.lease, undefined, 'the free spare is not used');
      assert.deepEqual(scheduler.snapshot(), before);
      running.release();
      await settle();
      assert.equal(grantedOn(waiter), 'gpu/m', 'still served by its own backend');
    });
  }

  it('waiters without refresh keep their candidates', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'spare' }]);
    hold(['gpu/m']);
    const fixed = call('fixed', ['gpu/m']);
    const widened = call('widened', ['gpu/m'], { refresh: ['spare/m'] });
    scheduler.refreshCandidates();
    await settle();
    assert.equal(fixed.lease, undefined);
    assert.equal(grantedOn(widened), 'spare/m');
    assert.deepEqual(
      scheduler.snapshot().parked.map((p) => [p.alias, p.backends]),
      [['fixed', ['gpu']]],
    );
  });

  it('with nothing parked it is a no-op', () => {
    const { scheduler } = schedulerHarness([{ name: 'gpu' }]);
    const before = scheduler.snapshot();
    scheduler.refreshCandidates();
    assert.deepEqual(scheduler.snapshot(), before);
  });
});

describe('refreshCandidates: each parked ticket is refreshed once, oldest first', () => {
  it('calls refresh in arrival order, skipping tickets without one', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }]);
    hold(['gpu/m']);
    const seen: string[] = [];
    const tracked = (name: string) => () => (seen.push(name), []);
    call('first', ['gpu/m'], { refresh: tracked('first') });
    call('fixed', ['gpu/m']);
    call('second', ['gpu/m'], { refresh: tracked('second') });
    scheduler.refreshCandidates();
    assert.deepEqual(seen, ['first', 'second']);
  });

  it('a refresh that disconnects a later waiter: that one is not refreshed and leaves', async () => {
    const { scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'spare' }]);
    hold(['gpu/m']);
    const controller = new AbortController();
    const first = call('first', ['gpu/m'], {
      refresh: () => {
        controller.abort();
        return [];
      },
    });
    const second = call('second', ['gpu/m'], { refresh: ['spare/m'], signal: controller.signal });
    scheduler.refreshCandidates();
    await settle();
    assert.equal(second.refreshes, 0);
    assert.equal(second.rejection?.reason, 'aborted');
    assert.equal(first.lease, undefined);
    assert.equal(scheduler.snapshot().backends.find((b) => b.name === 'spare')?.inflight, 0);
  });

  it('a widened waiter that leaves is gone from its new backend too', async () => {
    const { clock, scheduler, call, hold } = schedulerHarness([{ name: 'gpu' }, { name: 'spare' }]);
    hold(['gpu/m']);
    const onSpare = hold(['spare/busy']);
    const waiter = call('waiter', ['gpu/m'], { refresh: ['spare/m'] });
    scheduler.refreshCandidates();
    clock.advance(PARK_MS);
    await settle();
    assert.equal(waiter.rejection?.reason, 'park_timeout');
    onSpare.release();
    await settle();
    assert.equal(waiter.lease, undefined);
    assert.equal(scheduler.snapshot().backends.find((b) => b.name === 'spare')?.inflight, 0);
    assert.equal(clock.pendingTimers, 0);
  });
});

describe('LazyFifo.insertInOrder', () => {
  interface Item {
    seq: number;
    settled: boolean;
  }
  const item = (seq: number): Item => ({ seq, settled: false });

  /** A queue of `seqs`, the `settle` ones settled, `peekFirst` peeks once before inserting. */
  function queueOf(seqs: number[], settle: number[] = [], peekFirst = false) {
    const queue = new LazyFifo<Item>();
    const items = seqs.map(item);
    for (const x of items) queue.push(x);
    for (const x of items.filter((x) => settle.includes(x.seq))) {
      x.settled = true;
      queue.noteSettled();
    }
    if (peekFirst) queue.peek();
    return queue;
  }

  const cases: {
    name: string;
    seqs: number[];
    settle?: number[];
    peekFirst?: boolean;
    insert: number[];
    expect: number[];
  }[] = [
    { name: 'into an empty queue', seqs: [], insert: [5], expect: [5] },
    { name: 'before the head', seqs: [3, 4], insert: [1], expect: [1, 3, 4] },
    { name: 'in the middle', seqs: [1, 4, 9], insert: [5, 2], expect: [1, 2, 4, 5, 9] },
    { name: 'at the tail', seqs: [1, 2], insert: [7], expect: [1, 2, 7] },
    { name: 'among settled items', seqs: [1, 2, 3, 4, 5], settle: [2, 3, 4], insert: [3.5], expect: [1, 3.5, 5] },
    {
      name: 'after the head moved past settled items',
      seqs: [1, 2, 3, 8],
      settle: [1, 2],
      peekFirst: true,
      insert: [0, 5],
      expect: [0, 3, 5, 8],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const queue = queueOf(c.seqs, c.settle, c.peekFirst);
      for (const seq of c.insert) queue.insertInOrder(item(seq));
      assert.deepEqual(
        [...queue.values()].map((x) => x.seq),
        c.expect,
      );
      assert.equal(queue.live, c.expect.length);
      assert.equal(queue.peek()?.seq, c.expect[0]);
    });
  }

  it('keeps order and the live count through many inserts, settles and sweeps', () => {
    const queue = new LazyFifo<Item>();
    const all: Item[] = [];
    for (let seq = 0; seq < 400; seq += 2) all.push(item(seq));
    for (const x of all) queue.push(x);
    for (let seq = 399; seq > 0; seq -= 4) {
      const late = item(seq);
      all.push(late);
      queue.insertInOrder(late);
    }
    for (const x of all.filter((x) => x.seq % 3 === 0)) {
      x.settled = true;
      queue.noteSettled();
    }
    const live = all
      .filter((x) => !x.settled)
      .map((x) => x.seq)
      .sort((a, b) => a - b);
    assert.deepEqual(
      [...queue.values()].map((x) => x.seq),
      live,
    );
    assert.equal(queue.live, live.length);
  });
});
