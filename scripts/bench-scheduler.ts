/**
 * Scheduler micro-benchmark: does a decision stay cheap with many tickets parked?
 *
 * 20 backends (cap 4 each, all full) and 10 / 1,000 / 10,000 parked tickets spread over random
 * candidate subsets and type keys. Measures, in microseconds (median and p99):
 *   - hand-off:      lease.release() → a designated waiter holds the slot (synchronous part),
 *                    and until the waiter's promise callback has run;
 *   - park:          acquire() on the full fleet (the ticket parks);
 *   - free slot:     acquire() when a slot is free and nobody waits for it.
 * The parked count stays constant: every served waiter is replaced by a fresh parked ticket.
 *
 * Also, in milliseconds, one refreshCandidates() (model lists changed) with the same parked
 * counts, worst case: the older half of the tickets gains a backend on which the younger half
 * already waits, so every late joiner is inserted in the middle of that queue; and a second
 * refresh that adds nothing.
 *
 * Run: npx tsx scripts/bench-scheduler.ts   (no network; pure in-process)
 */
import { Scheduler, systemClock, type Candidate, type Lease, type Ticket } from '../src/scheduler/index.ts';
import { prng } from '../test/helpers/prng.ts';

const BACKENDS = 20;
const CAP = 4;
const TYPE_KEYS = 12;
const PARKED_SIZES = [10, 1_000, 10_000];
const WARMUP_ITERATIONS = 2_000;
const ITERATIONS = 20_000;
const SPARE = 'spare';
const LATE = 'late';
const REFRESH_ROUNDS = 5;

interface Samples {
  handOffSync: number[];
  handOffResolved: number[];
  park: number[];
  freeSlot: number[];
}

const microsSince = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1_000;

async function measure(parkedCount: number, seed: number): Promise<Samples> {
  const random = prng(seed);
  const backendName = (i: number) => `gpu${i}`;
  const scheduler = new Scheduler({ clock: systemClock, maxParked: parkedCount + 10, affinityMaxWaitMs: 120_000 });
  for (let i = 0; i < BACKENDS; i++) scheduler.upsertBackend({ name: backendName(i), cap: CAP, paid: false, available: true });
  scheduler.upsertBackend({ name: SPARE, cap: 1, paid: false, available: true });

  const held: Lease[] = [];
  for (let i = 0; i < BACKENDS; i++) {
    for (let slot = 0; slot < CAP; slot++) held.push(scheduler.tryAcquireNow([{ backend: backendName(i), model: 'warm' }], new Set())!);
  }

  const randomCandidates = (): Candidate[] => {
    const typeKey = `model-${Math.floor(random() * TYPE_KEYS)}`;
    const count = 1 + Math.floor(random() * 3);
    const picked = new Set<number>();
    while (picked.size < count) picked.add(Math.floor(random() * BACKENDS));
    return [...picked].map((i) => ({ backend: backendName(i), model: random() < 0.8 ? typeKey : `model-${Math.floor(random() * TYPE_KEYS)}` }));
  };

  const controllers: AbortController[] = [];
  let resolvedAt = 0n;
  let served = 0;
  const ticket = (): Ticket => {
    const controller = new AbortController();
    controllers.push(controller);
    return { alias: `alias-${Math.floor(random() * 5)}`, candidates: randomCandidates(), parkMs: 600_000, signal: controller.signal };
  };
  const park = (t: Ticket): void => {
    scheduler.acquire(t).then(
      (lease) => {
        resolvedAt = process.hrtime.bigint();
        served++;
        held.push(lease);
      },
      () => {},
    );
  };
  for (let i = 0; i < parkedCount; i++) park(ticket());

  const samples: Samples = { handOffSync: [], handOffResolved: [], park: [], freeSlot: [] };
  for (let iteration = 0; iteration < WARMUP_ITERATIONS + ITERATIONS; iteration++) {
    const record = iteration >= WARMUP_ITERATIONS;

    // (a) hand-off: free one random slot.
    const index = Math.floor(random() * held.length);
    const lease = held[index];
    held[index] = held[held.length - 1];
    held.pop();
    const servedBefore = served;
    const start = process.hrtime.bigint();
    lease.release();
    const syncMicros = microsSince(start);
    await Promise.resolve(); // the waiter's promise callback runs before this continuation
    if (served > servedBefore) {
      if (record) {
        samples.handOffSync.push(syncMicros);
        samples.handOffResolved.push(Number(resolvedAt - start) / 1_000);
      }
      // (b1) keep the parked count constant: a fresh ticket parks on the full fleet.
      const fresh = ticket();
      const parkStart = process.hrtime.bigint();
      park(fresh);
      if (record) samples.park.push(microsSince(parkStart));
    } else {
      // Nobody could use that backend: refill the slot so the fleet stays full.
      held.push(scheduler.tryAcquireNow([{ backend: lease.backend, model: 'refill' }], new Set())!);
    }

    // (b2) a free slot nobody waits for, behind two full backends in candidate order.
    const freeCandidates = [...randomCandidates().slice(0, 2), { backend: SPARE, model: 'spare-model' }];
    const freeStart = process.hrtime.bigint();
    const spareLease = scheduler.acquire({ alias: 'fresh', candidates: freeCandidates, parkMs: 0 });
    if (record) samples.freeSlot.push(microsSince(freeStart));
    (await spareLease).release();
  }

  const stillParked = scheduler.snapshot().parked.length;
  if (stillParked !== parkedCount) throw new Error(`parked count drifted: ${stillParked} ≠ ${parkedCount}`);
  for (const controller of controllers) controller.abort();
  for (const lease of held) lease.release();
  if (scheduler.hasParked()) throw new Error('tickets left parked after abort');
  return samples;
}

interface RefreshSamples {
  widening: number[];
  unchanged: number[];
}

/** refreshCandidates() cost with `parkedCount` tickets parked on a full fleet (see the header). */
function measureRefresh(parkedCount: number, seed: number): RefreshSamples {
  const random = prng(seed);
  const samples: RefreshSamples = { widening: [], unchanged: [] };
  for (let round = 0; round < REFRESH_ROUNDS; round++) {
    const scheduler = new Scheduler({ clock: systemClock, maxParked: parkedCount + 10, affinityMaxWaitMs: 120_000 });
    const names = [...Array.from({ length: BACKENDS }, (_, i) => `gpu${i}`), LATE];
    for (const name of names) scheduler.upsertBackend({ name, cap: 1, paid: false, available: true });
    const held = names.map((name) => scheduler.tryAcquireNow([{ backend: name, model: 'warm' }], new Set())!);
    const controllers: AbortController[] = [];
    for (let i = 0; i < parkedCount; i++) {
      const typeKey = `model-${Math.floor(random() * TYPE_KEYS)}`;
      const own: Candidate[] = [{ backend: names[Math.floor(random() * BACKENDS)], model: typeKey }];
      const older = i < parkedCount / 2;
      const candidates = older ? own : [...own, { backend: LATE, model: typeKey }];
      const refreshed = [...own, { backend: LATE, model: typeKey }];
      const controller = new AbortController();
      controllers.push(controller);
      scheduler
        .acquire({ alias: 'bench', candidates, parkMs: 600_000, signal: controller.signal, refresh: () => refreshed })
        .catch(() => {});
    }
    let start = process.hrtime.bigint();
    scheduler.refreshCandidates();
    samples.widening.push(microsSince(start) / 1_000);
    start = process.hrtime.bigint();
    scheduler.refreshCandidates();
    samples.unchanged.push(microsSince(start) / 1_000);
    if (scheduler.snapshot().parked.some((p) => !p.backends.includes(LATE))) throw new Error('a ticket was not widened');
    for (const controller of controllers) controller.abort();
    for (const lease of held) lease.release();
  }
  return samples;
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function printTable(title: string, rows: { parked: number; values: number[] }[]): void {
  const base = rows[0];
  const baseMedian = quantile(base.values, 0.5);
  const baseP99 = quantile(base.values, 0.99);
  console.log(`\n${title}`);
  console.log('  parked  samples  median µs    p99 µs   median ×10-case   p99 ×10-case');
  for (const { parked, values } of rows) {
    const median = quantile(values, 0.5);
    const p99 = quantile(values, 0.99);
    console.log(
      `  ${String(parked).padStart(6)}  ${String(values.length).padStart(7)}  ${median.toFixed(2).padStart(9)}  ${p99
        .toFixed(2)
        .padStart(8)}   ${(median / baseMedian).toFixed(2).padStart(15)}   ${(p99 / baseP99).toFixed(2).padStart(12)}`,
    );
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  await measure(10, 7); // JIT warm-up of the whole path
  const results: { parked: number; samples: Samples }[] = [];
  for (const parked of PARKED_SIZES) results.push({ parked, samples: await measure(parked, parked) });

  console.log(`scheduler bench: ${BACKENDS} backends × cap ${CAP} (all full), ${TYPE_KEYS} type keys, ${ITERATIONS} iterations per size`);
  const table = (title: string, pick: (s: Samples) => number[]) =>
    printTable(title, results.map(({ parked, samples }) => ({ parked, values: pick(samples) })));
  table('(a) hand-off: release() → designated waiter holds the slot (synchronous)', (s) => s.handOffSync);
  table('(a) hand-off: release() → waiter’s promise callback has run', (s) => s.handOffResolved);
  table('(b) fresh decision, fleet full → ticket parks', (s) => s.park);
  table('(b) fresh decision, free slot with no eligible waiter → lease now', (s) => s.freeSlot);

  measureRefresh(1_000, 7); // JIT warm-up
  console.log(`\nrefreshCandidates(), ms (median of ${REFRESH_ROUNDS}; older half widened onto a backend the younger half waits on)`);
  console.log('  parked   widening   nothing new');
  for (const parked of PARKED_SIZES) {
    const { widening, unchanged } = measureRefresh(parked, parked);
    console.log(`  ${String(parked).padStart(6)}  ${quantile(widening, 0.5).toFixed(2).padStart(9)}  ${quantile(unchanged, 0.5).toFixed(2).padStart(12)}`);
  }
  console.log(`\ntotal ${((performance.now() - started) / 1_000).toFixed(1)} s`);
}

await main();
