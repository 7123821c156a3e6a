/**
 * Immediate decisions of the scheduler: which free candidate a call gets, the scheduler order,
 * 'no_backend', and the speed EWMA that feeds the order.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from './helpers/fake-clock.ts';
import { SchedulerRejection, type Lease, type Scheduler } from '../src/scheduler/index.ts';
import { candidates, schedulerHarness, type FleetBackend } from './helpers/scheduler-harness.ts';

interface FleetEntry extends FleetBackend {
  /** Output tok/s to record once before the test; omitted = never measured. */
  speed?: number;
  /** Slots to occupy before the test. */
  busy?: number;
}

/** A scheduler over the given fleet (cap 1, unpaid, available unless said otherwise). */
function fleet(entries: FleetEntry[]): Scheduler {
  const { scheduler, addBackend, hold } = schedulerHarness([]);
  for (const { speed, busy, ...spec } of entries) {
    addBackend(spec);
    if (speed !== undefined) scheduler.recordSpeed(spec.name, { status: 200, outputTokens: speed * 100, seconds: 100 });
    for (let i = 0; i < (busy ?? 0); i++) hold([`${spec.name}/warm`]);
  }
  return scheduler;
}

async function acquireNow(scheduler: Scheduler, specs: string[]): Promise<Lease> {
  return scheduler.acquire({ alias: 'test', candidates: candidates(...specs), parkMs: 0 });
}

describe('scheduler: which free candidate a call gets', () => {
  const cases: { name: string; fleet: FleetEntry[]; ask: string[]; expect: string }[] = [
    {
      name: 'the fastest measured backend',
      fleet: [
        { name: 'slow', speed: 20 },
        { name: 'fast', speed: 80 },
      ],
      ask: ['slow/m', 'fast/m'],
      expect: 'fast',
    },
    {
      name: 'a never-measured backend before measured ones (so it gets measured once)',
      fleet: [{ name: 'fast', speed: 500 }, { name: 'new' }],
      ask: ['fast/m', 'new/m'],
      expect: 'new',
    },
    {
      name: 'unpaid before paid, even when paid is faster',
      fleet: [
        { name: 'cloud', paid: true, speed: 900 },
        { name: 'gpu', speed: 10 },
      ],
      ask: ['cloud/m', 'gpu/m'],
      expect: 'gpu',
    },
    {
      name: 'unpaid never-measured before a paid never-measured',
      fleet: [{ name: 'cloud', paid: true }, { name: 'gpu' }],
      ask: ['cloud/m', 'gpu/m'],
      expect: 'gpu',
    },
    {
      name: 'paid when every unpaid candidate is busy',
      fleet: [
        { name: 'gpu', busy: 1 },
        { name: 'cloud', paid: true },
      ],
      ask: ['gpu/m', 'cloud/m'],
      expect: 'cloud',
    },
    {
      name: 'the slower unpaid backend when the faster one is busy',
      fleet: [
        { name: 'fast', speed: 90, busy: 1 },
        { name: 'slow', speed: 9 },
        { name: 'cloud', paid: true },
      ],
      ask: ['fast/m', 'slow/m', 'cloud/m'],
      expect: 'slow',
    },
    {
      name: 'candidate order when nothing tells backends apart',
      fleet: [{ name: 'a' }, { name: 'b' }],
      ask: ['b/m', 'a/m'],
      expect: 'b',
    },
    {
      name: 'not an unavailable backend',
      fleet: [
        { name: 'down', available: false },
        { name: 'up', speed: 1 },
      ],
      ask: ['down/m', 'up/m'],
      expect: 'up',
    },
    {
      name: 'not an unknown backend',
      fleet: [{ name: 'known', speed: 1 }],
      ask: ['ghost/m', 'known/m'],
      expect: 'known',
    },
    {
      name: 'an uncapped backend however busy (cap 0 = unlimited)',
      fleet: [{ name: 'vllm', cap: 0, busy: 50 }],
      ask: ['vllm/m'],
      expect: 'vllm',
    },
    {
      name: 'a backend with slots left under its cap',
      fleet: [
        { name: 'fast', cap: 3, busy: 2, speed: 50 },
        { name: 'slow', speed: 5 },
      ],
      ask: ['slow/m', 'fast/m'],
      expect: 'fast',
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const lease = await acquireNow(fleet(c.fleet), c.ask);
      assert.equal(lease.backend, c.expect);
      assert.equal(lease.waitedMs, 0);
    });
  }

  it('leases the type key of the chosen candidate and counts the slot', async () => {
    const scheduler = fleet([{ name: 'a', cap: 2 }]);
    const lease = await acquireNow(scheduler, ['a/qwen3-8b']);
    assert.equal(lease.model, 'qwen3-8b');
    const [a] = scheduler.snapshot().backends;
    assert.equal(a.inflight, 1);
    assert.equal(a.lastTypeKey, 'qwen3-8b');
  });
});

describe('scheduler: order() for failover lists', () => {
  it('lists available candidates only, busy ones included, in scheduler order (by predicted time to first token)', () => {
    const scheduler = fleet([
      { name: 'cloud', paid: true, speed: 999 },
      { name: 'slow', speed: 5 },
      { name: 'fast', speed: 50, busy: 1 },
      { name: 'down', available: false },
      { name: 'new' },
    ]);
    const ordered = scheduler.order(candidates('cloud/x', 'slow/x', 'fast/x', 'down/x', 'ghost/x', 'new/x'));
    // 'new' is tried once; the free 'slow' starts now, the busy 'fast' only after its call (100 s)
    assert.deepEqual(
      ordered.map((c) => c.backend),
      ['new', 'slow', 'fast', 'cloud'],
    );
  });

  it('does not modify the list it is given', () => {
    const scheduler = fleet([
      { name: 'a', speed: 1 },
      { name: 'b', speed: 2 },
    ]);
    const list = candidates('a/x', 'b/x');
    scheduler.order(list);
    assert.deepEqual(
      list.map((c) => c.backend),
      ['a', 'b'],
    );
  });
});

describe("scheduler: 'no_backend' is immediate and never parks", () => {
  const cases: { name: string; fleet: FleetEntry[]; ask: string[] }[] = [
    { name: 'no candidates at all', fleet: [{ name: 'a' }], ask: [] },
    { name: 'only unknown backends', fleet: [{ name: 'a' }], ask: ['ghost/m'] },
    { name: 'only unavailable backends', fleet: [{ name: 'a', available: false, busy: 0 }], ask: ['a/m'] },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const scheduler = fleet(c.fleet);
      const attempt = scheduler.acquire({ alias: 'x', candidates: candidates(...c.ask), parkMs: 60_000 });
      await assert.rejects(attempt, (error: unknown) => {
        assert.ok(error instanceof SchedulerRejection);
        assert.equal(error.reason, 'no_backend');
        assert.equal(error.retryAfter, undefined);
        return true;
      });
      assert.equal(scheduler.hasParked(), false);
    });
  }

  it('a removed backend no longer counts', async () => {
    const scheduler = fleet([{ name: 'a' }]);
    scheduler.removeBackend('a');
    await assert.rejects(acquireNow(scheduler, ['a/m']), { reason: 'no_backend' });
    assert.deepEqual(scheduler.snapshot().backends, []);
  });
});

describe('scheduler: speed EWMA (α 0.3 of output tok/s)', () => {
  const ok = (outputTokens: number, seconds: number) => ({ status: 200, outputTokens, seconds });
  const cases: {
    name: string;
    samples: { status: number; outputTokens: number; seconds: number }[];
    expect: number | undefined;
  }[] = [
    { name: 'never measured', samples: [], expect: undefined },
    { name: 'the first sample is taken as is', samples: [ok(100, 2)], expect: 50 },
    { name: 'later samples weigh 0.3', samples: [ok(100, 1), ok(200, 1)], expect: 0.3 * 200 + 0.7 * 100 },
    {
      name: 'three samples',
      samples: [ok(100, 1), ok(200, 1), ok(50, 1)],
      expect: 0.3 * 50 + 0.7 * (0.3 * 200 + 0.7 * 100),
    },
    { name: 'exactly 16 output tokens counts', samples: [ok(16, 0.5)], expect: 32 },
    { name: 'a short answer counts too: the first sample as is', samples: [ok(3, 0.1)], expect: 30 },
    {
      name: 'fewer than 16 tokens weigh in proportion',
      samples: [ok(100, 1), ok(4, 0.01)],
      expect: 0.075 * 400 + 0.925 * 100,
    },
    {
      name: 'non-200 is ignored',
      samples: [
        { status: 500, outputTokens: 400, seconds: 1 },
        { status: 206, outputTokens: 400, seconds: 1 },
      ],
      expect: undefined,
    },
    { name: 'zero seconds is ignored', samples: [ok(100, 0)], expect: undefined },
    {
      name: 'ignored samples leave the average alone',
      samples: [ok(100, 1), { status: 429, outputTokens: 1000, seconds: 1 }, ok(0, 1)],
      expect: 100,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const scheduler = fleet([{ name: 'a' }]);
      for (const sample of c.samples) scheduler.recordSpeed('a', sample);
      const speed = scheduler.snapshot().backends[0].speed;
      if (c.expect === undefined) assert.equal(speed, undefined);
      else assert.ok(Math.abs(speed! - c.expect) < 1e-9, `speed ${speed} ≠ ${c.expect}`);
    });
  }

  it('samples for an unknown backend are dropped', () => {
    const scheduler = fleet([{ name: 'a' }]);
    scheduler.recordSpeed('ghost', ok(100, 1));
    assert.deepEqual(
      scheduler.snapshot().backends.map((b) => b.name),
      ['a'],
    );
  });

  it('a measurement moves a backend behind never-measured ones and ranks it by speed', () => {
    const scheduler = fleet([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    scheduler.recordSpeed('a', ok(40, 1));
    scheduler.recordSpeed('b', ok(80, 1));
    assert.deepEqual(
      scheduler.order(candidates('a/m', 'b/m', 'c/m')).map((c) => c.backend),
      ['c', 'b', 'a'],
    );
  });
});

describe('scheduler: tryAcquireNow (failover)', () => {
  it('takes the first free candidate in scheduler order, skipping busy and excluded ones', () => {
    const scheduler = fleet([
      { name: 'tried', speed: 100 },
      { name: 'busy', speed: 90, busy: 1 },
      { name: 'free', speed: 10 },
      { name: 'cloud', paid: true },
    ]);
    const lease = scheduler.tryAcquireNow(candidates('cloud/m', 'busy/m', 'free/m', 'tried/m'), new Set(['tried']));
    assert.equal(lease?.backend, 'free');
    assert.equal(lease?.waitedMs, 0);
  });

  it('falls back to paid, and returns null when nothing is free', () => {
    const scheduler = fleet([
      { name: 'gpu', busy: 1 },
      { name: 'cloud', paid: true },
    ]);
    assert.equal(scheduler.tryAcquireNow(candidates('gpu/m', 'cloud/m'), new Set())?.backend, 'cloud');
    assert.equal(scheduler.tryAcquireNow(candidates('gpu/m', 'cloud/m'), new Set()), null);
    assert.equal(scheduler.hasParked(), false);
  });
});

describe('FakeClock', () => {
  it('fires due timers in due order as time advances, and not cleared ones', () => {
    const clock = new FakeClock(0);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('b@20'), 20);
    clock.setTimeout(() => fired.push('a@10'), 10);
    const cleared = clock.setTimeout(() => fired.push('cleared'), 15);
    clock.setTimeout(() => fired.push('late@50'), 50);
    clock.clearTimeout(cleared);
    clock.advance(30);
    assert.deepEqual(fired, ['a@10', 'b@20']);
    assert.equal(clock.now(), 30);
    assert.equal(clock.pendingTimers, 1);
  });

  it('a timer set while firing runs within the same advance when due', () => {
    const clock = new FakeClock(0);
    const fired: number[] = [];
    clock.setTimeout(() => {
      fired.push(clock.now());
      clock.setTimeout(() => fired.push(clock.now()), 5);
    }, 10);
    clock.advance(20);
    assert.deepEqual(fired, [10, 15]);
  });
});

describe('systemClock', () => {
  it('caps very long delays instead of letting Node fire them after 1 ms', async () => {
    const { systemClock } = await import('../src/scheduler/index.ts');
    let fired = false;
    const handle = systemClock.setTimeout(() => (fired = true), Number.POSITIVE_INFINITY);
    await new Promise((resolve) => setTimeout(resolve, 5));
    systemClock.clearTimeout(handle);
    assert.equal(fired, false);
  });
});
