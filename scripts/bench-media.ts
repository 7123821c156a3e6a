/**
 * npm run bench:media — ComfyUI media jobs through the gateway (issue 11, "Performance").
 *
 *   run      JOBS (200) async jobs submitted at once over HTTP to a real gateway (buildApp on
 *            127.0.0.1 port 0, call log on) with one generation alias on the real sd15 fixture
 *            workflow across 3 fake ComfyUI boxes (real servers, `max_concurrent: 1`,
 *            `poll_interval: 0.05`), each KSampler STEPS (4) × STEP_MS (50) ms. Each client
 *            follows its job's SSE events and then reads result 0. Checks: every job `done`
 *            with its bytes; no box over its cap, seen two ways — the scheduler's snapshot
 *            sampled every ms, and each fake's own prompt record (no two prompts on a box at
 *            once, neither running nor queued). Per job, three figures that add up to
 *            submit → result bytes:
 *              queue wait  submit sent → the job's `running` event arrived (the gateway grants
 *                          the slot, then emits `running`); 0 for a job whose first event was
 *                          already `running` or its end (it started before the client
 *                          subscribed: any wait it had is then counted as overhead)
 *              execution   the fake's own endedAt − startedAt of the job's prompt, matched
 *                          exactly by prompt id (the gateway files the id it submits under in
 *                          its job store; the fake records the id it received)
 *              overhead    the rest: compile, POST /prompt, noticing the end (websocket,
 *                          /history), fetching and storing the outputs, the terminal event,
 *                          and GET /result/0
 *            Overhead is also given apart for the jobs seen parked (from the slot grant on) and
 *            for the few that ran at once (their figure carries the burst of JOBS submits and
 *            SSE connects the event loop serves meanwhile). Throughput against the ideal:
 *            3 boxes ÷ the mean execution time.
 *   parked   Every box busy with a very long job, PARKED (1000) more async jobs submitted;
 *            RSS and V8 heap used before and after, after GC (run with --expose-gc, as the npm
 *            script does), per parked job. Then all are cancelled over HTTP: the queue must
 *            empty and, once the long jobs are cancelled too, no box may get any of them.
 * One process: gateway, fakes and clients share one event loop (the overhead figures include
 * the fakes' and the clients' work). A few WARMUP (6) jobs run first and are not counted.
 */
import { startComfyFake } from '../test/fakes/comfyui-server.ts';
import type { ComfyFake, ComfyPromptRecord } from '../test/fakes/comfyui-types.ts';
import { startGateway, type TestGateway } from '../test/helpers/gateway.ts';
import { sd15Models } from '../test/helpers/media-service.ts';
import {
  cancelJob, maxOverlap, mean, mediaAgent, MiB, percentile, pool, runJob, settleGc, submit, type JobTimes,
} from './lib/media-load.ts';

const JOBS = Number(process.env.JOBS ?? 200);
const PARKED = Number(process.env.PARKED ?? 1000);
const STEPS = Number(process.env.STEPS ?? 4);
const STEP_MS = Number(process.env.STEP_MS ?? 50);
const WARMUP = Number(process.env.WARMUP ?? 6);
const BOXES = 3;
const ALIAS = 'sd15';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '—');
const failures: string[] = [];
const check = (ok: boolean, what: string) => { if (!ok) failures.push(what); return ok; };

async function waitUntil(cond: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Samples the scheduler's snapshot every ms: samples taken, highest inflight per backend, over-cap samples. */
function capSampler(gw: TestGateway) {
  const most = new Map<string, number>();
  let samples = 0;
  let overCap = 0;
  let parkedMost = 0;
  const timer = setInterval(() => {
    const snap = gw.gateway.scheduler.snapshot();
    samples++;
    parkedMost = Math.max(parkedMost, snap.parked.length);
    for (const b of snap.backends) {
      most.set(b.name, Math.max(most.get(b.name) ?? 0, b.inflight));
      if (b.cap > 0 && b.inflight > b.cap) overCap++;
    }
  }, 1);
  return { stop: () => clearInterval(timer), get: () => ({ samples, overCap, parkedMost, most }) };
}

/** Most prompts a box held at once: running (startedAt → endedAt) and queued or running (submittedAt → endedAt). */
function boxOverlap(prompts: ComfyPromptRecord[]): { running: number; held: number; unfinished: number } {
  const ended = prompts.filter((p) => p.startedAt !== undefined && p.endedAt !== undefined);
  return {
    running: maxOverlap(ended.map((p) => ({ start: p.startedAt!, end: p.endedAt! }))),
    held: maxOverlap(prompts.map((p) => ({ start: p.submittedAt, end: p.endedAt ?? Infinity }))),
    unfinished: prompts.length - ended.length,
  };
}

interface Split { queue: number; exec: number; overhead: number; total: number; accept: number; parked: boolean; backend: string }

/** The three figures of one finished job (see the header), from the client's times and the fake's prompt. */
function splitOf(gw: TestGateway, fakes: Map<string, ComfyFake>, t: JobTimes): Split | undefined {
  const job = gw.gateway.media.store.get(t.id, Date.now());
  const prompt = job?.backend && job.promptId ? fakes.get(job.backend)?.prompts.find((p) => p.id === job.promptId) : undefined;
  if (!job || !prompt || prompt.startedAt === undefined || prompt.endedAt === undefined || (t.sawQueued && t.runningAt === null)) return undefined;
  const total = t.resultAt - t.submitAt;
  const queue = t.sawQueued ? t.runningAt! - t.submitAt : 0;
  const exec = prompt.endedAt - prompt.startedAt;
  return { queue, exec, overhead: total - queue - exec, total, accept: t.acceptedAt - t.submitAt, parked: t.sawQueued, backend: job.backend! };
}

async function main(): Promise<void> {
  const hasGc = typeof globalThis.gc === 'function';
  console.log(`bench:media: ${JOBS} jobs on ${BOXES} fake ComfyUI boxes (max_concurrent 1, ${STEPS} steps × ${STEP_MS} ms), ${PARKED} parked; gc ${hasGc ? 'exposed' : 'NOT exposed (run with --expose-gc)'}`);
  const fakeList = await Promise.all(Array.from({ length: BOXES }, () => startComfyFake({ knobs: { stepMs: STEP_MS, steps: STEPS, cache: false } })));
  const names = fakeList.map((_, i) => `box${i + 1}`);
  const fakes = new Map(names.map((n, i) => [n, fakeList[i]]));
  const gw = await startGateway(
    names.map((name, i) => ({ name, url: fakeList[i].url, type: 'comfyui', max_concurrent: 1, poll_interval: 0.05, max_wait: 3600 })),
    { image_models: sd15Models(names, ALIAS), max_parked: Math.max(JOBS, PARKED) + 100, media_park_timeout_s: 3600, call_log: true },
  );
  const agent = mediaAgent(Math.max(JOBS, PARKED) * 2 + 16);
  const base = gw.url;
  try {
    // ───────────── warm-up (not counted)
    await pool(Array.from({ length: WARMUP }), BOXES, (_, i) => runJob(base, agent, ALIAS, `warm-up ${i}`));
    const warmPrompts = new Map(names.map((n) => [n, fakes.get(n)!.prompts.length]));

    // ───────────── run: JOBS at once
    const sampler = capSampler(gw);
    const t0 = performance.now();
    const times = await Promise.all(Array.from({ length: JOBS }, (_, i) => runJob(base, agent, ALIAS, `a lighthouse, job ${i}`).catch((err: Error) => err)));
    const wall = (performance.now() - t0) / 1000;
    sampler.stop();
    const errors = times.filter((t): t is Error => t instanceof Error);
    const ok = times.filter((t): t is JobTimes => !(t instanceof Error));
    const done = ok.filter((t) => t.status === 'done' && t.resultStatus === 200 && t.resultBytes > 0);
    check(errors.length === 0, `${errors.length} jobs threw: ${errors[0]?.message}`);
    check(done.length === JOBS, `${done.length}/${JOBS} jobs done with a result (statuses: ${[...new Set(ok.map((t) => t.status))].join(', ')})`);
    const splits = done.map((t) => splitOf(gw, fakes, t));
    const matched = splits.filter((s): s is Split => s !== undefined);
    check(matched.length === done.length, `${done.length - matched.length} done jobs without a matching prompt on their box`);
    const runPrompts = names.reduce((n, b) => n + fakes.get(b)!.prompts.length - warmPrompts.get(b)!, 0);
    check(runPrompts === JOBS, `the boxes got ${runPrompts} prompts for ${JOBS} jobs (resubmits?)`);
    const cap = sampler.get();
    check(cap.overCap === 0, `${cap.overCap} snapshot samples had a backend over its cap`);
    const overlaps = names.map((n) => boxOverlap(fakes.get(n)!.prompts));
    check(overlaps.every((o) => o.running <= 1 && o.held <= 1 && o.unfinished === 0), `a box held more than one prompt at once: ${JSON.stringify(overlaps)}`);
    const perBox = names.map((n) => matched.filter((s) => s.backend === n).length);
    const execMean = mean(matched.map((s) => s.exec));
    const throughput = JOBS / wall;
    const ideal = BOXES / (execMean / 1000);

    // ───────────── parked: every box busy, PARKED more jobs waiting
    for (const f of fakeList) f.setKnobs({ steps: 1_000_000 }); // ~14 h per blocker at 50 ms a step
    const promptsBefore = fakeList.reduce((n, f) => n + f.prompts.length, 0);
    const blockers = await pool(Array.from({ length: BOXES }), BOXES, (_, i) => submit(base, agent, ALIAS, `blocker ${i}`));
    await waitUntil(() => fakeList.every((f) => f.prompts.at(-1)?.status === 'running') && gw.gateway.scheduler.snapshot().backends.every((b) => b.inflight === 1), 'the long jobs to run on every box');
    await settleGc();
    const before = process.memoryUsage();
    const sentPrompts = fakeList.reduce((n, f) => n + f.prompts.length, 0);
    const tPark = performance.now();
    const parked = await pool(Array.from({ length: PARKED }), 50, (_, i) => submit(base, agent, ALIAS, `parked job ${i}`).then((s) => s.id));
    const submitS = (performance.now() - tPark) / 1000;
    await waitUntil(() => gw.gateway.scheduler.snapshot().parked.length === PARKED, `${PARKED} parked`);
    await sleep(200);
    await settleGc();
    const after = process.memoryUsage();
    const snapParked = gw.gateway.scheduler.snapshot().parked.length;
    check(snapParked === PARKED, `${snapParked} parked instead of ${PARKED}`);
    check(fakeList.reduce((n, f) => n + f.prompts.length, 0) === sentPrompts, 'a box got a prompt while its slot was held');
    const tCancel = performance.now();
    const cancelled = await pool(parked, 50, (id) => cancelJob(base, agent, id));
    const cancelS = (performance.now() - tCancel) / 1000;
    check(cancelled.every((s) => s === 'cancelled'), `cancels answered ${[...new Set(cancelled)].join(', ')}`);
    await waitUntil(() => gw.gateway.scheduler.snapshot().parked.length === 0, 'the queue to empty', 5000).catch((e: Error) => check(false, e.message));
    const queueEmpty = gw.gateway.scheduler.snapshot().parked.length === 0;
    for (const b of blockers) await cancelJob(base, agent, b.id);
    await waitUntil(() => gw.gateway.scheduler.snapshot().backends.every((b) => b.inflight === 0), 'the slots to come back', 10_000);
    await sleep(500); // time for any wrongly kept parked job to be sent
    const leaked = fakeList.reduce((n, f) => n + f.prompts.length, 0) - promptsBefore - BOXES;
    check(leaked === 0, `the boxes got ${leaked} prompts of cancelled parked jobs`);
    await settleGc();
    const cleared = process.memoryUsage();

    // ───────────── report
    const q = matched.map((s) => s.queue);
    const e = matched.map((s) => s.exec);
    const o = matched.map((s) => s.overhead);
    const tot = matched.map((s) => s.total);
    const oParked = matched.filter((s) => s.parked).map((s) => s.overhead);
    const oAtOnce = matched.filter((s) => !s.parked).map((s) => s.overhead);
    const row = (name: string, xs: number[], note: string) =>
      `| ${name} | ${fmt(percentile(xs, 50))} | ${fmt(percentile(xs, 99))} | ${fmt(Math.max(...xs))} | ${note} |`;
    console.log(`\n### ${JOBS} jobs, ${BOXES} boxes × max_concurrent 1, ${STEPS} × ${STEP_MS} ms steps (per job, ms)\n`);
    console.log('| figure | median | p99 | max | how |\n|---|---|---|---|---|');
    console.log(row('submit → result bytes', tot, 'client: POST sent → last byte of GET /result/0'));
    console.log(row('submit → 202', matched.map((s) => s.accept), `client: POST sent → 202 (all ${JOBS} sent at once)`));
    console.log(row('queue wait', q, 'client: POST sent → `running` SSE event'));
    console.log(row('execution', e, "fake's endedAt − startedAt of the job's prompt (by prompt id)"));
    console.log(row('**gateway overhead**', o, `the rest: submit → result − queue wait − execution (all ${o.length})`));
    console.log(row('overhead, parked jobs', oParked, `the ${oParked.length} first seen \`queued\`: from the slot grant on`));
    console.log(row('overhead, run at once', oAtOnce, `the ${oAtOnce.length} that ran without parking: includes the ${JOBS}-submit burst`));
    console.log(`\n| check | result |\n|---|---|`);
    console.log(`| jobs done with result 0 | ${done.length}/${JOBS} (errors ${errors.length}); per box ${perBox.join(' / ')} |`);
    console.log(`| prompts on the boxes | ${runPrompts} for ${JOBS} jobs (no resubmits) |`);
    console.log(`| scheduler snapshot | ${cap.samples} samples (every ~1 ms), most inflight per box ${[...cap.most.values()].join(' / ')}, over cap ${cap.overCap}; up to ${cap.parkedMost} parked |`);
    console.log(`| fakes' own records | most prompts running at once per box ${overlaps.map((x) => x.running).join(' / ')}; held (queued or running) ${overlaps.map((x) => x.held).join(' / ')} |`);
    console.log(`| throughput | ${fmt(throughput, 2)} jobs/s in ${fmt(wall, 2)} s vs ideal ${fmt(ideal, 2)} (3 ÷ mean execution ${fmt(execMean)} ms) = **${fmt((100 * throughput) / ideal)} %** |`);
    const d = (k: 'rss' | 'heapUsed') => after[k] - before[k];
    console.log(`\n### ${PARKED} parked jobs (gc ${hasGc ? 'on' : 'off'})\n`);
    console.log('| | before | with parked | per parked job | after cancelling |\n|---|---|---|---|---|');
    console.log(`| RSS | ${fmt(before.rss / MiB)} MiB | ${fmt(after.rss / MiB)} MiB | ${fmt(d('rss') / PARKED / 1024, 2)} KiB | ${fmt(cleared.rss / MiB)} MiB |`);
    console.log(`| heap used | ${fmt(before.heapUsed / MiB)} MiB | ${fmt(after.heapUsed / MiB)} MiB | ${fmt(d('heapUsed') / PARKED / 1024, 2)} KiB | ${fmt(cleared.heapUsed / MiB)} MiB |`);
    console.log(`\nsubmitting ${PARKED} took ${fmt(submitS, 2)} s (50 at a time), cancelling them ${fmt(cancelS, 2)} s; queue empty after cancel: ${queueEmpty}; prompts of cancelled jobs the boxes got: ${leaked}`);
  } finally {
    await agent.close();
    await gw.close();
    await Promise.all(fakeList.map((f) => f.close()));
  }
  if (failures.length) {
    console.log(`\nFAILED:\n  ${failures.join('\n  ')}`);
    process.exit(1);
  }
  console.log('\nall checks passed');
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
