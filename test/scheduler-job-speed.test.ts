/**
 * Media speed: seconds per job per backend and type key (generation alias), an EWMA like tok/s;
 * media candidates rank by it (lower is better, never-measured first as for tok/s, unpaid
 * before paid); LLM ordering is unchanged; the figures show in the snapshot.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareMediaBackends, type Scheduler } from '../src/scheduler/index.ts';
import { candidates, grantedOn, schedulerHarness, settle, type FleetBackend } from './helpers/scheduler-harness.ts';

interface Entry extends FleetBackend {
  /** Seconds per job to record once, by alias. */
  jobs?: Record<string, number>;
  /** Output tok/s to record once. */
  speed?: number;
  busy?: boolean;
}

function fleet(entries: Entry[]): { scheduler: Scheduler; order: (...specs: string[]) => string[] } {
  const { scheduler, addBackend, hold } = schedulerHarness([]);
  for (const { jobs, speed, busy, ...spec } of entries) {
    addBackend({ kind: 'media', ...spec });
    for (const [alias, seconds] of Object.entries(jobs ?? {})) scheduler.recordJobSeconds(spec.name, alias, seconds);
    if (speed !== undefined) scheduler.recordSpeed(spec.name, { status: 200, outputTokens: speed * 100, seconds: 100 });
    if (busy) hold([`${spec.name}/warm`]);
  }
  const order = (...specs: string[]) => scheduler.order(candidates(...specs)).map((c) => `${c.backend}/${c.model}`);
  return { scheduler, order };
}

describe('media speed: the seconds-per-job average', () => {
  it('first sample as is, then an EWMA with α 0.3, per backend and alias', () => {
    const { scheduler } = fleet([{ name: 'comfy' }, { name: 'other' }]);
    scheduler.recordJobSeconds('comfy', 'sdxl', 10);
    scheduler.recordJobSeconds('comfy', 'sdxl', 20);
    scheduler.recordJobSeconds('comfy', 'flux', 40);
    scheduler.recordJobSeconds('other', 'sdxl', 5);
    const jobSeconds = (name: string) => scheduler.snapshot().backends.find((b) => b.name === name)?.jobSeconds;
    assert.deepEqual(jobSeconds('comfy'), { sdxl: 0.3 * 20 + 0.7 * 10, flux: 40 });
    assert.deepEqual(jobSeconds('other'), { sdxl: 5 });
  });

  it('ignores durations that are not finite and positive, and unknown backends', () => {
    const { scheduler } = fleet([{ name: 'comfy' }]);
    for (const bad of [0, -3, Number.NaN, Number.POSITIVE_INFINITY]) scheduler.recordJobSeconds('comfy', 'sdxl', bad);
    scheduler.recordJobSeconds('nowhere', 'sdxl', 3);
    assert.equal(scheduler.snapshot().backends[0].jobSeconds, undefined, 'absent until measured');
    scheduler.recordJobSeconds('comfy', 'sdxl', 3);
    scheduler.recordJobSeconds('comfy', 'sdxl', Number.NaN);
    assert.deepEqual(scheduler.snapshot().backends[0].jobSeconds, { sdxl: 3 });
  });

  it('recordSpeed and recordJobSeconds feed separate figures', () => {
    const { scheduler } = fleet([{ name: 'gpu', kind: 'llm', speed: 50, jobs: { sdxl: 9 } }]);
    const [backend] = scheduler.snapshot().backends;
    assert.equal(backend.speed, 50);
    assert.deepEqual(backend.jobSeconds, { sdxl: 9 });
  });
});

describe('media speed: how media candidates are ordered', () => {
  const cases: { name: string; fleet: Entry[]; ask: string[]; expect: string[] }[] = [
    {
      name: 'the fewest seconds per job first',
      fleet: [
        { name: 'slow', jobs: { sdxl: 30 } },
        { name: 'fast', jobs: { sdxl: 8 } },
      ],
      ask: ['slow/sdxl', 'fast/sdxl'],
      expect: ['fast/sdxl', 'slow/sdxl'],
    },
    {
      name: 'per alias: each box is judged on the alias asked for',
      fleet: [
        { name: 'a', jobs: { sdxl: 5, wan: 300 } },
        { name: 'b', jobs: { sdxl: 9, wan: 120 } },
      ],
      ask: ['a/wan', 'b/wan'],
      expect: ['b/wan', 'a/wan'],
    },
    {
      name: 'a backend that never ran the alias first, as for unmeasured tok/s (it gets measured once)',
      fleet: [
        { name: 'known', jobs: { sdxl: 2 } },
        { name: 'new', jobs: { flux: 1 } },
      ],
      ask: ['known/sdxl', 'new/sdxl'],
      expect: ['new/sdxl', 'known/sdxl'],
    },
    {
      name: 'unpaid before paid, even when paid is faster',
      fleet: [
        { name: 'cloud', paid: true, jobs: { sdxl: 1 } },
        { name: 'home', jobs: { sdxl: 60 } },
      ],
      ask: ['cloud/sdxl', 'home/sdxl'],
      expect: ['home/sdxl', 'cloud/sdxl'],
    },
    {
      name: 'candidate order when nothing tells them apart',
      fleet: [{ name: 'a' }, { name: 'b' }],
      ask: ['b/sdxl', 'a/sdxl'],
      expect: ['b/sdxl', 'a/sdxl'],
    },
    {
      name: 'tok/s does not rank media candidates',
      fleet: [
        { name: 'a', speed: 1, jobs: { sdxl: 4 } },
        { name: 'b', speed: 900, jobs: { sdxl: 40 } },
      ],
      ask: ['b/sdxl', 'a/sdxl'],
      expect: ['a/sdxl', 'b/sdxl'],
    },
    {
      name: 'LLM candidates still rank by tok/s, seconds per job ignored',
      fleet: [
        { name: 'x', kind: 'llm', speed: 10, jobs: { m: 1 } },
        { name: 'y', kind: 'llm', speed: 90, jobs: { m: 99 } },
      ],
      ask: ['x/m', 'y/m'],
      expect: ['y/m', 'x/m'],
    },
    {
      name: 'a mixed list ranks by tok/s (the media backend counts as unmeasured)',
      fleet: [
        { name: 'llm', kind: 'llm', speed: 10 },
        { name: 'comfy', jobs: { m: 1 } },
      ],
      ask: ['llm/m', 'comfy/m'],
      expect: ['comfy/m', 'llm/m'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(fleet(c.fleet).order(...c.ask), c.expect);
    });
  }

  it('a call gets the fastest free box; the next when that one is busy', async () => {
    const { scheduler } = fleet([
      { name: 'fast', jobs: { sdxl: 3 }, busy: true },
      { name: 'mid', jobs: { sdxl: 7 } },
      { name: 'slow', jobs: { sdxl: 20 } },
    ]);
    const lease = await scheduler.acquire({
      alias: 'sdxl',
      candidates: candidates('slow/sdxl', 'mid/sdxl', 'fast/sdxl'),
      parkMs: 0,
    });
    assert.equal(lease.backend, 'mid');
    assert.equal(scheduler.tryAcquireNow(candidates('slow/sdxl', 'fast/sdxl'), new Set())?.backend, 'slow');
  });

  it('a new measurement reorders', () => {
    const { scheduler, order } = fleet([
      { name: 'a', jobs: { sdxl: 5 } },
      { name: 'b', jobs: { sdxl: 6 } },
    ]);
    assert.deepEqual(order('a/sdxl', 'b/sdxl'), ['a/sdxl', 'b/sdxl']);
    scheduler.recordJobSeconds('a', 'sdxl', 20); // 0.3 × 20 + 0.7 × 5 = 9.5
    assert.deepEqual(order('a/sdxl', 'b/sdxl'), ['b/sdxl', 'a/sdxl']);
  });

  it('compareMediaBackends: paid, then unmeasured, then fewer seconds', () => {
    assert.ok(compareMediaBackends({ paid: false, secondsPerJob: 99 }, { paid: true, secondsPerJob: 1 }) < 0);
    assert.ok(compareMediaBackends({ paid: false, secondsPerJob: undefined }, { paid: false, secondsPerJob: 1 }) < 0);
    assert.ok(compareMediaBackends({ paid: false, secondsPerJob: 2 }, { paid: false, secondsPerJob: 3 }) < 0);
    assert.equal(
      compareMediaBackends({ paid: true, secondsPerJob: undefined }, { paid: true, secondsPerJob: undefined }),
      0,
    );
  });
});

describe('media speed: within a GPU group', () => {
  it('a waiter that can run on two media backends of one group is handed the faster one', async () => {
    const { scheduler, call, hold } = schedulerHarness([
      { name: 'slow', group: 'box', kind: 'media' },
      { name: 'fast', group: 'box', kind: 'media' },
    ]);
    scheduler.configureGroups({ box: { cap: 1 } });
    scheduler.recordJobSeconds('slow', 'sdxl', 30);
    scheduler.recordJobSeconds('fast', 'sdxl', 3);
    const running = hold(['slow/other']);
    const job = call('job', ['slow/sdxl', 'fast/sdxl']);
    running.release();
    await settle();
    assert.equal(grantedOn(job), 'fast/sdxl');
  });
});
