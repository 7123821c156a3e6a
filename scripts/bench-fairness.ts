/**
 * npm run bench:fairness — does one user's burst push another user's questions behind it?
 *
 * One simulated fleet (scripts/lib/sim-fleet.ts: 2 llama-swap-like boxes, 2 slots each, one
 * model), the gateway as its own process (the bundle `npm start` runs) with a master key, and
 * two users created through the admin API. Each run has a fresh fleet and a fresh gateway:
 *   1. alone: user B sends 20 streaming calls spread over the span of the burst;
 *   2. burst: user A sends 200 streaming calls at once, and B the same 20 calls at the same times.
 * Every call is a stream through the `openai` client; time to first token (TTFT) is send → the
 * first chunk with content. Target (issue 19): B's p95 TTFT with the burst ≤ 2 × B's p95 alone.
 *
 * The calls: A's are short batch jobs (prompt ~200 tokens, ~60 out: ~1.2 s alone), B's are
 * chat turns with context (prompt ~1,500 tokens, ~100 out: ~1.3 s to first token alone). No
 * scheduler can preempt a running call, so with the burst B waits at least for the first of
 * the 4 busy slots to free (p95 ~0.8 s here) and prefills beside one of A's calls; a fair
 * order keeps B within the target, FIFO puts B behind whatever of the burst is still parked.
 *
 * Beside the measured runs, the same calls on the same box model without a gateway
 * (lib/fair-reference.ts): a perfectly fair order and a FIFO, the best and the worst a
 * scheduler can do here. Times printed are homelab seconds (wall ÷ scale). p50/p95 are
 * nearest-rank.
 *
 *   npx tsx scripts/bench-fairness.ts [--scale 0.5] [--seed 1] [--out f.json] [--check]
 *     --scale  wall seconds per homelab second (default 0.5: the whole run takes about 2 min)
 *     --seed   the calls' sizes and B's arrival jitter (default 1)
 *     --out    write the table's figures and every call's record as JSON
 *     --check  exit 1 when the target is missed (otherwise only failed calls do)
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import { prng } from '../test/helpers/prng.ts';
import { sleep, startGatewayProcess } from './lib/processes.ts';
import { referenceTtfts } from './lib/fair-reference.ts';
import { startSimFleet, type SimBoxSpec } from './lib/sim-fleet.ts';

const { values: flags } = parseArgs({
  options: {
    scale: { type: 'string', default: '0.5' },
    seed: { type: 'string', default: '1' },
    out: { type: 'string' },
    check: { type: 'boolean', default: false },
  },
});
const SCALE = Number(flags.scale);
const SEED = Number(flags.seed);
if (!(SCALE > 0)) throw new Error('--scale must be a number > 0');

const MODEL = 'bench-8b';
/** What the clients ask for: an alias of MODEL on both boxes. */
const ALIAS = 'chat';
const MASTER_KEY = 'bench-fairness-master-key-0000';
const BOXES: SimBoxSpec[] = [1, 2].map((i) => ({
  name: `box${i}`, model: MODEL, decode: 50, prefill: 1200, parallel: 2, scaling: 0.6,
}));
const A_CALLS = 200;
const B_CALLS = 20;
const TARGET_RATIO = 2;

// ───────────────────────────── the calls

interface PlannedCall {
  user: 'A' | 'B';
  /** Homelab seconds after the run's start. */
  at: number;
  promptTokens: number;
  maxTokens: number;
}

interface CallResult extends PlannedCall {
  /** Homelab seconds from send to the first content chunk; null = none came. */
  ttft: number | null;
  /** Homelab seconds from send to the end of the stream. */
  e2e: number | null;
  ok: boolean;
  error?: string;
  /** The gateway's `x-gateway-route`, when it sent one. */
  route?: string;
  backend?: string;
}

/** Log-normal around `median`, clamped. */
const lengthOf = (random: () => number, median: number, sigma: number, min: number, max: number): number => {
  const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return Math.round(Math.min(max, Math.max(min, median * Math.exp(sigma * normal))));
};

/** A's burst (all at t = 0) and B's calls spread over the time the burst needs to drain. */
function plan(seed: number): { a: PlannedCall[]; b: PlannedCall[]; spanS: number } {
  const random = prng(seed);
  const a = Array.from({ length: A_CALLS }, (): PlannedCall => ({
    user: 'A', at: 0, promptTokens: lengthOf(random, 200, 0.5, 16, 2000), maxTokens: lengthOf(random, 60, 0.4, 8, 300),
  }));
  // the burst's drain time: every slot busy, each call at the shared rate of a full box
  const box = BOXES[0];
  const shared = (1 + box.scaling * (box.parallel - 1)) / box.parallel;
  const work = a.reduce((s, c) => s + c.promptTokens / box.prefill + c.maxTokens / box.decode, 0);
  const spanS = work / shared / (BOXES.length * box.parallel);
  const gap = (spanS * 0.95) / B_CALLS;
  const b = Array.from({ length: B_CALLS }, (_, i): PlannedCall => ({
    user: 'B', at: 0.5 + i * gap + random() * gap * 0.5,
    promptTokens: lengthOf(random, 1500, 0.3, 400, 4000), maxTokens: lengthOf(random, 100, 0.3, 20, 300),
  }));
  return { a, b, spanS };
}

// ───────────────────────────── one run

const homelabS = (wallMs: number) => wallMs / 1000 / SCALE;

async function streamOne(client: OpenAI, call: PlannedCall): Promise<CallResult> {
  const sent = performance.now();
  const result: CallResult = { ...call, ttft: null, e2e: null, ok: false };
  try {
    const { data: stream, response } = await client.chat.completions.create({
      model: ALIAS, stream: true, stream_options: { include_usage: true }, max_tokens: call.maxTokens,
      messages: [{ role: 'user', content: 'tok '.repeat(call.promptTokens) }],
    }).withResponse();
    result.route = response.headers.get('x-gateway-route') ?? undefined;
    result.backend = response.headers.get('x-gateway-backend') ?? undefined;
    let usage = false;
    for await (const chunk of stream) {
      if (result.ttft === null && chunk.choices[0]?.delta?.content) result.ttft = homelabS(performance.now() - sent);
      if (chunk.usage) usage = true;
    }
    result.ok = usage && result.ttft !== null;
    if (!result.ok) result.error = 'stream ended without content or usage';
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
  }
  result.e2e = homelabS(performance.now() - sent);
  return result;
}

async function createUser(base: string, name: string): Promise<string> {
  const res = await fetch(`${base}/admin/api/users`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER_KEY}` },
    body: JSON.stringify({ name }),
  });
  if (res.status !== 201) throw new Error(`creating user ${name}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { key: string }).key;
}

const clientFor = (base: string, key: string) =>
  new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0, timeout: 3_600_000 });

interface RunResult {
  calls: CallResult[];
  /** Homelab seconds from the start to the last of A's calls ending (burst runs only). */
  aDoneS?: number;
}

async function run(name: 'alone' | 'burst', calls: { a: PlannedCall[]; b: PlannedCall[] }): Promise<RunResult> {
  const fleet = await startSimFleet(BOXES, SCALE);
  try {
    const backends = Object.fromEntries(fleet.boxes.map((b) => [b.name, b.url]));
    const gateway = await startGatewayProcess(`fairness-${name}`, backends, [
      `api_key: ${MASTER_KEY}`, 'max_concurrent: 2', 'park_timeout_s: 3600', 'max_parked: 10000', 'call_log: false',
      `affinity_max_wait_s: ${120 * SCALE} # the default 120 s, on the run's clock`,
      'virtual_models:', `  ${ALIAS}: ${MODEL}`,
    ]);
    const master = clientFor(gateway.url, MASTER_KEY);
    await waitForModel(master);
    const users = { A: clientFor(gateway.url, await createUser(gateway.url, 'user-a')),
      B: clientFor(gateway.url, await createUser(gateway.url, 'user-b')) };
    // every box measured once (by the master key, a user of its own) before the clock starts
    const warmUp: PlannedCall = { user: 'A', at: 0, promptTokens: 50, maxTokens: 10 };
    await Promise.all(Array.from({ length: 4 }, () => streamOne(master, warmUp)));
    const todo = name === 'burst' ? [...calls.a, ...calls.b] : calls.b;
    const t0 = performance.now() + 100;
    const results = await Promise.all(todo.map(async (call) => {
      const wait = t0 + call.at * 1000 * SCALE - performance.now();
      if (wait > 0) await sleep(wait);
      return streamOne(users[call.user], call);
    }));
    process.kill(gateway.pid, 'SIGTERM');
    const aEnds = results.filter((r) => r.user === 'A').map((r) => r.at + (r.e2e ?? 0));
    return { calls: results, aDoneS: aEnds.length ? Math.max(...aEnds) : undefined };
  } finally {
    await fleet.close();
  }
}

async function waitForModel(client: OpenAI): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const ids = await client.models.list().then((page) => page.data.map((m) => m.id), (): string[] => []);
    if (BOXES.every((b) => ids.includes(`${b.name}/${MODEL}`))) return;
    await sleep(100);
  }
  throw new Error(`the gateway never listed ${MODEL} on every box`);
}

// ───────────────────────────── the report

const percentile = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
};
const fmt = (s: number | undefined) => (s === undefined || Number.isNaN(s) ? '—' : `${s.toFixed(2)} s`);

interface Figures { p50: number; p95: number; e2eP95: number; ok: number; failed: number }

function figures(results: CallResult[], user: 'A' | 'B'): Figures {
  const mine = results.filter((r) => r.user === user);
  const ok = mine.filter((r) => r.ok);
  const ttfts = ok.map((r) => r.ttft!);
  return { p50: percentile(ttfts, 0.5), p95: percentile(ttfts, 0.95), e2eP95: percentile(ok.map((r) => r.e2e!), 0.95),
    ok: ok.length, failed: mine.length - ok.length };
}

function routesOf(results: CallResult[]): string {
  const counts = new Map<string, number>();
  for (const r of results) if (r.route) counts.set(r.route, (counts.get(r.route) ?? 0) + 1);
  return [...counts].map(([route, n]) => `${route} ×${n}`).join(', ') || 'none sent';
}

/** B's p95 time to first token on the box model alone, and with the burst in a fair and in a FIFO order. */
function referenceFigures(calls: { a: PlannedCall[]; b: PlannedCall[] }) {
  const bP95 = (all: PlannedCall[], order: 'fair' | 'fifo') =>
    percentile(referenceTtfts(BOXES, all, order).filter((_, i) => all[i].user === 'B'), 0.95);
  const both = [...calls.a, ...calls.b];
  return { alone: bP95(calls.b, 'fifo'), fair: bP95(both, 'fair'), fifo: bP95(both, 'fifo') };
}

async function main(): Promise<void> {
  const calls = plan(SEED);
  console.log(`bench:fairness — seed ${SEED}, scale ${SCALE}, ${BOXES.length} boxes × ${BOXES[0].parallel} slots; `
    + `A: ${A_CALLS} calls at once, B: ${B_CALLS} calls over ${calls.spanS.toFixed(0)} s (homelab seconds)`);
  const started = performance.now();
  const alone = await run('alone', calls);
  console.log(`  run 1 (B alone) done in ${((performance.now() - started) / 1000).toFixed(0)} s wall`);
  const burst = await run('burst', calls);
  console.log(`  run 2 (A's burst + B) done in ${((performance.now() - started) / 1000).toFixed(0)} s wall`);

  const bAlone = figures(alone.calls, 'B');
  const bBurst = figures(burst.calls, 'B');
  const aBurst = figures(burst.calls, 'A');
  const ratio = bBurst.p95 / bAlone.p95;
  const pass = ratio <= TARGET_RATIO && bAlone.failed + bBurst.failed + aBurst.failed === 0;
  console.log('\n| | B alone | B with A\'s burst | ratio |\n|---|---|---|---|');
  const row = (label: string, x: number, y: number, bold = false) =>
    console.log(`| ${label} | ${fmt(x)} | ${fmt(y)} | ${bold ? '**' : ''}×${(y / x).toFixed(2)}${bold ? '**' : ''} |`);
  row('B ttft p50', bAlone.p50, bBurst.p50);
  row('B ttft p95', bAlone.p95, bBurst.p95, true);
  row('B e2e p95', bAlone.e2eP95, bBurst.e2eP95);
  console.log(`| B completed / failed | ${bAlone.ok} / ${bAlone.failed} | ${bBurst.ok} / ${bBurst.failed} | |`);
  const reference = referenceFigures(calls);
  row('B ttft p95, ideal fair order (simulated, no gateway)', reference.alone, reference.fair);
  row('B ttft p95, FIFO (simulated, no gateway)', reference.alone, reference.fifo);
  console.log(`\nA's burst: ${aBurst.ok} of ${A_CALLS} completed (${aBurst.failed} failed), `
    + `the last at ${fmt(burst.aDoneS)}; A ttft p50 ${fmt(aBurst.p50)}, p95 ${fmt(aBurst.p95)}`);
  console.log(`x-gateway-route seen: ${routesOf(burst.calls)}`);
  const failures = [...alone.calls, ...burst.calls].filter((c) => !c.ok);
  for (const r of failures.slice(0, 5)) console.log(`  failed (${r.user}): ${r.error}`);
  console.log(`\n${pass ? 'PASS' : 'FAIL'}: B's p95 time to first token with A's burst is ×${ratio.toFixed(2)} `
    + `its p95 alone (target ≤ ×${TARGET_RATIO})`);

  if (flags.out) {
    writeFileSync(flags.out, JSON.stringify({
      seed: SEED, scale: SCALE, boxes: BOXES, aCalls: A_CALLS, bCalls: B_CALLS, spanS: calls.spanS,
      figures: { bAlone, bBurst, aBurst, aDoneS: burst.aDoneS, ratio, target: TARGET_RATIO, pass, reference },
      calls: { alone: alone.calls, burst: burst.calls },
    }, null, 1));
    console.log(`written: ${flags.out}`);
  }
  const failedCalls = bAlone.failed + bBurst.failed + aBurst.failed;
  process.exit(failedCalls > 0 || (flags.check && !pass) ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
