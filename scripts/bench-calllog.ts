/**
 * npm run bench:calllog — what the call log costs the event loop and throughput at 2,000
 * calls/s, side by side in one run.
 *
 * In process (each variant in a child process of its own): a driver makes 2,000 calls/s —
 * parses a request body, builds a realistic CallRecord (20 users, several backends and models,
 * tokens and cost) — and hands it to the call log, with `monitorEventLoopDelay` (1 ms
 * resolution) watching:
 *   off            the records are built and dropped (no call log)
 *   on             CallLog, main-thread writes
 *   on+bodies      the same with body capture (request ~3 KiB, response ~2 KiB per call),
 *                  gzip'd on the call log's compression thread (src/stats/bodies.ts)
 *   on+bodies/zlib-here   the same with async zlib on the main thread (the compressor's fallback)
 *   worker         the writer-thread alternative (scripts/lib/calllog-worker-writes.ts): slices
 *   worker+bodies  posted as plain objects, gzip and INSERT in the worker
 * End to end: a gateway process (bundle, pinned to CPU 0 when taskset exists) in front of a
 * fake vLLM, a user key with a day quota, 2,000 req/s offered (open loop) with `call_log`
 * off / on / on + `capture_bodies`; the gateway's event-loop delay comes from a probe loaded
 * with `--import` (scripts/lib/loop-delay-probe.mjs). Then the same three at saturation
 * (64 connections, closed loop) for the throughput ratio.
 *
 * Env: DURATION (s per run, default 10), WARMUP (s, default 2), RATE (calls/s, default 2000),
 * PARTS ("inprocess e2e", default both).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { BodyCompressor } from '../src/stats/bodies.ts';
import { CallLog } from '../src/stats/call-log.ts';
import type { CallRecord } from '../src/stats/record.ts';
import { prng } from '../test/helpers/prng.ts';
import { WorkerCallLog } from './lib/calllog-worker-writes.ts';
import { cpuMs, HAS_TASKSET, sleep, startFakeProcess, startGatewayProcess } from './lib/processes.ts';

const DURATION_S = Number(process.env.DURATION ?? 10);
const WARMUP_S = Number(process.env.WARMUP ?? 2);
const RATE = Number(process.env.RATE ?? 2000);
const PARTS = (process.env.PARTS ?? 'inprocess e2e').split(/\s+/);
const VARIANTS = ['off', 'on', 'on+bodies', 'on+bodies/zlib-here', 'worker', 'worker+bodies'] as const;
type Variant = (typeof VARIANTS)[number];

interface Measured {
  /** Calls (or responses) per second over the window. */
  rate: number;
  /** Event-loop delay, ms. */
  p99: number;
  max: number;
  /** Process CPU ms per call (every thread: main, zlib pool, worker). */
  cpuMsPerCall: number;
  /** Share of the time the main thread's event loop was busy (in process). */
  elu?: number;
  rowsOnDisk?: number;
  latencyP50?: number;
  latencyP99?: number;
  errors?: number;
}

// ───────────────────────────── realistic calls

const WORDS = 'the of and to in is that for it as with was on be at by this had not are but from or have an they which one you were all we her she there would their will when who him been has more if no out do so can what up said about other into than its time only could new them man some these then two first any like now my over such our even most after also made many before must through back years where much your way well down should because each just those people how too little state good very make world still see own men work long here get both between life being under never day same another know while last might us great old year off come since against go came right used take three'.split(' ');
const BACKENDS = [
  { backend: 'gpu1', model: 'qwen3-8b', paid: false },
  { backend: 'gpu2', model: 'llama-3.1-8b', paid: false },
  { backend: 'openrouter', model: 'anthropic/claude-sonnet-4.6', paid: true },
];

function text(random: () => number, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(WORDS[Math.floor(random() * WORDS.length)]);
  return out.join(' ');
}

/** 64 request/response bodies to pick from (generated once: the driver measures the log, not this). */
function bodyPool(): { request: string; response: Buffer }[] {
  const random = prng(42);
  return Array.from({ length: 64 }, () => ({
    request: JSON.stringify({ model: 'fast', stream: false, messages: [{ role: 'system', content: text(random, 60) }, { role: 'user', content: text(random, 460) }] }),
    response: Buffer.from(JSON.stringify({
      id: 'chatcmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text(random, 300) }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 700, completion_tokens: 380, total_tokens: 1080 },
    })),
  }));
}

function makeRecord(i: number, random: () => number, body: { request: string; response: Buffer }, capture: boolean): CallRecord {
  const b = BACKENDS[i % BACKENDS.length];
  const prompt = 200 + Math.floor(random() * 4000);
  const completion = 20 + Math.floor(random() * 800);
  const cached = b.paid ? Math.floor(prompt * random() * 0.8) : 0;
  return {
    ts: Date.now(), request_id: randomUUID(), // as the gateway makes them
    duration_ms: 50 + Math.floor(random() * 4000),
    ttft_ms: random() < 0.6 ? 30 + Math.floor(random() * 400) : null, endpoint: '/v1/chat/completions',
    source: `user-${i % 20}`, user_id: 1 + (i % 20), requested_model: i % 4 === 0 ? 'fast' : `${b.backend}/${b.model}`,
    model: b.model, backend: b.backend, status: random() < 0.97 ? 200 : 502, reason: null,
    prompt_tokens: prompt, completion_tokens: completion, cached_tokens: cached, cache_write_tokens: 0, reasoning: null,
    cost_usd: b.paid ? ((prompt - cached) * 3 + cached * 0.3 + completion * 15) / 1e6 : 0,
    upstream_cost_usd: b.paid ? ((prompt - cached) * 3 + completion * 15) / 1e6 : null, usage_estimated: false, paid: b.paid,
    ...(capture ? { request_body: body.request, response_body: body.response } : {}),
  };
}

// ───────────────────────────── in process

/** One variant in this process: drive RATE calls/s for WARMUP + DURATION seconds. */
async function runVariant(variant: Variant): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-bench-calllog-'));
  const capture = variant.includes('+bodies');
  const opts = { flushMs: 1000, retentionDays: 90, captureBodies: capture, bodyRetentionDays: 14 };
  const log = variant === 'off' ? null : variant.startsWith('worker') ? new WorkerCallLog(dir, opts) : CallLog.open(dir, opts);
  if (variant === 'on+bodies/zlib-here') {
    // the compressor as it is once its thread failed: async zlib on this thread
    const compressor = new BodyCompressor();
    Reflect.set(compressor, 'failed', true);
    Object.defineProperty(log, 'compressor', { value: compressor });
  }
  const bodies = bodyPool();
  const random = prng(7);
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  let made = 0;
  let counted = 0;
  let measuring = false;
  const started = performance.now();
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * RATE);
    for (; made < due; made++) {
      const body = bodies[made % bodies.length];
      JSON.parse(body.request); // the request's own work: its body is parsed
      const rec = makeRecord(made, random, body, capture);
      log?.record(rec);
      if (measuring) counted++;
    }
  }, 1);
  await sleep(WARMUP_S * 1000);
  histogram.enable();
  const cpuBefore = process.cpuUsage();
  const eluBefore = performance.eventLoopUtilization();
  const windowStart = performance.now();
  measuring = true;
  await sleep(DURATION_S * 1000);
  measuring = false;
  const elapsed = (performance.now() - windowStart) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const elu = performance.eventLoopUtilization(eluBefore).utilization;
  histogram.disable();
  clearInterval(timer);
  let rows = 0;
  if (log instanceof CallLog) {
    await log.flush();
    rows = log.recent({ limit: 1 })[0]?.id ?? 0;
  } else if (log) rows = await log.drained();
  log?.close();
  rmSync(dir, { recursive: true, force: true });
  return {
    rate: counted / elapsed, p99: histogram.percentile(99) / 1e6, max: histogram.max / 1e6,
    cpuMsPerCall: (cpu.user + cpu.system) / 1000 / counted, elu, rowsOnDisk: rows,
  };
}

/** Each variant in its own process, so that no variant inherits another's heap or JIT state. */
function inChild(variant: Variant): Promise<Measured> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, '--variant', variant], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Measured) : reject(new Error(`${variant} exited ${code}`))));
  });
}

// ───────────────────────────── end to end

interface Gw { name: string; url: string; pid: number; key: string; probe: string }

const MASTER = 'bench-master-key-000000';

async function startAccountedGateway(name: string, fake: string, extra: string[], scratch: string): Promise<Gw> {
  const probe = join(scratch, `${name}.loop.json`);
  const gw = await startGatewayProcess(name, { ns: fake }, [`api_key: ${MASTER}`, 'max_parked: 1000', ...extra], {
    nodeArgs: ['--import', join(import.meta.dirname, 'lib', 'loop-delay-probe.mjs')],
    env: { LOOP_DELAY_OUT: probe },
  });
  const created = await fetch(`${gw.url}/admin/api/users`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
    body: JSON.stringify({ name: 'bench', quota_req_day: 1_000_000_000, quota_cost_month: 1_000_000 }),
  }).then((r) => r.json() as Promise<{ key: string }>);
  return { name, ...gw, key: created.key, probe };
}

/** The gateway's event-loop delay since the last call (the probe writes it on SIGUSR2). */
async function loopDelay(gw: Gw): Promise<{ p99: number; max: number }> {
  const before = safeMtime(gw.probe);
  process.kill(gw.pid, 'SIGUSR2');
  for (let i = 0; i < 100 && safeMtime(gw.probe) === before; i++) await sleep(10);
  return JSON.parse(readFileSync(gw.probe, 'utf8')) as { p99: number; max: number };
}

function safeMtime(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

const CHAT = JSON.stringify({ model: 'ns/bench', stream: false, messages: [{ role: 'user', content: text(prng(1), 460) }] });

/** `rate` req/s offered for WARMUP + DURATION (open loop: a slow answer does not slow the offer), or closed loop at `rate` 0. */
async function drive(gw: Gw, rate: number, connections = 64): Promise<Measured> {
  const agent = new Agent({ connections, pipelining: 1 });
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` };
  const latencies: number[] = [];
  let errors = 0;
  let measuring = false;
  let stop = false;
  const inflight = new Set<Promise<void>>();
  const one = () => {
    const start = performance.now();
    const counted = measuring;
    const p = request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers, body: CHAT, dispatcher: agent })
      .then(async (res) => {
        await res.body.text();
        if (res.statusCode !== 200) errors++;
      }, () => void errors++)
      .then(() => {
        if (counted && measuring) latencies.push(performance.now() - start);
        inflight.delete(p);
      });
    inflight.add(p);
    return p;
  };
  let ticker: NodeJS.Timeout | undefined;
  const loops: Promise<void>[] = [];
  const began = performance.now();
  if (rate > 0) {
    let sent = 0;
    ticker = setInterval(() => {
      const due = Math.floor(((performance.now() - began) / 1000) * rate);
      for (; sent < due; sent++) void one();
    }, 1);
  } else {
    for (let i = 0; i < 64; i++) loops.push((async () => { while (!stop) await one(); })());
  }
  await sleep(WARMUP_S * 1000);
  await loopDelay(gw); // resets the probe's histogram
  const cpuBefore = cpuMs(gw.pid);
  measuring = true;
  const windowStart = performance.now();
  await sleep(DURATION_S * 1000);
  measuring = false;
  const elapsed = (performance.now() - windowStart) / 1000;
  const cpuAfter = cpuMs(gw.pid);
  const delay = await loopDelay(gw);
  stop = true;
  clearInterval(ticker);
  await Promise.all([...loops, ...inflight]);
  await agent.close();
  latencies.sort((a, b) => a - b);
  return {
    rate: latencies.length / elapsed, p99: delay.p99, max: delay.max, cpuMsPerCall: (cpuAfter - cpuBefore) / latencies.length,
    latencyP50: latencies[Math.floor(latencies.length * 0.5)], latencyP99: latencies[Math.floor(latencies.length * 0.99)], errors,
  };
}

// ───────────────────────────── report

const f = (n: number | undefined, d = 2) => (n === undefined || Number.isNaN(n) ? '—' : n.toFixed(d));
const ok = (good: boolean) => (good ? 'ok' : '**over**');

function mean(runs: Measured[]): Measured {
  const avg = (k: keyof Measured) => runs.reduce((s, r) => s + (r[k] ?? 0), 0) / runs.length;
  return {
    rate: avg('rate'), p99: avg('p99'), max: Math.max(...runs.map((r) => r.max)), cpuMsPerCall: avg('cpuMsPerCall'),
    latencyP50: avg('latencyP50'), latencyP99: avg('latencyP99'), errors: avg('errors'),
  };
}

async function main(): Promise<void> {
  console.log(`bench:calllog — ${RATE} calls/s, ${DURATION_S}s per run after ${WARMUP_S}s warm-up; targets: throughput ≥ 0.95× off, loop delay p99 ≤ 5 ms, max ≤ 10 ms`);
  if (PARTS.includes('inprocess')) {
    const results = new Map<Variant, Measured>();
    for (const v of VARIANTS) results.set(v, await inChild(v));
    const off = results.get('off')!;
    console.log('\nIn process (driver + call log on one thread):\n');
    console.log('| variant | calls/s | × off | loop delay p99 | max | main thread busy | CPU per call (all threads) | rows written | targets |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const [v, r] of results) {
      const ratio = r.rate / off.rate;
      console.log(`| ${v} | ${f(r.rate, 0)} | ${f(ratio)} | ${f(r.p99)} ms | ${f(r.max)} ms | ${f((r.elu ?? 0) * 100, 1)} % | ${f(r.cpuMsPerCall * 1000, 1)} µs | ${v === 'off' ? '—' : r.rowsOnDisk} | ${ok(ratio >= 0.95 && r.p99 <= 5 && r.max <= 10)} |`);
    }
  }
  if (PARTS.includes('e2e')) {
    const scratch = mkdtempSync(join(tmpdir(), 'llmgw-bench-calllog-e2e-'));
    process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
    const fake = await startFakeProcess(8, 0);
    const gateways = [
      await startAccountedGateway('log-off', fake, ['call_log: false'], scratch),
      await startAccountedGateway('log-on', fake, ['call_log: true'], scratch),
      await startAccountedGateway('log-on-bodies', fake, ['call_log: true', 'capture_bodies: true'], scratch),
    ];
    const fixed = new Map<string, Measured[]>();
    const saturated = new Map<string, Measured[]>();
    // alternate the variants twice so that warm-up and drift favour none
    for (let round = 0; round < 2; round++) {
      for (const gw of gateways) {
        fixed.set(gw.name, [...(fixed.get(gw.name) ?? []), await drive(gw, RATE)]);
        saturated.set(gw.name, [...(saturated.get(gw.name) ?? []), await drive(gw, 0)]);
      }
    }
    const off = mean(fixed.get('log-off')!);
    const offMax = mean(saturated.get('log-off')!);
    console.log(`\nEnd to end (gateway process${HAS_TASKSET ? ' on CPU 0, fake + driver on CPU 1' : ''}; user key, quota checked on every call):\n`);
    console.log('| gateway | req/s at ' + RATE + ' offered | × off | loop delay p99 | max | latency p50 / p99 | CPU per req | req/s saturated (c64) | × off | targets |');
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const gw of gateways) {
      const r = mean(fixed.get(gw.name)!);
      const s = mean(saturated.get(gw.name)!);
      const ratio = r.rate / off.rate;
      const satRatio = s.rate / offMax.rate;
      console.log(`| ${gw.name} | ${f(r.rate, 0)}${r.errors ? ` (${r.errors} errors)` : ''} | ${f(ratio)} | ${f(r.p99)} ms | ${f(r.max)} ms | ${f(r.latencyP50)} / ${f(r.latencyP99)} ms | ${f(r.cpuMsPerCall, 3)} ms | ${f(s.rate, 0)} | ${f(satRatio)} | ${ok(ratio >= 0.95 && r.p99 <= 5 && r.max <= 10)} |`);
    }
  }
  process.exit(0);
}

const variantArg = process.argv.indexOf('--variant');
if (variantArg > 0) {
  const measured = await runVariant(process.argv[variantArg + 1] as Variant);
  process.stdout.write(JSON.stringify(measured));
  process.exit(0);
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
