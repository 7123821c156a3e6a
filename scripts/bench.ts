/**
 * npm run bench — direct-to-fake vs through-the-gateway, side by side in one run, on loopback.
 *
 * Workloads (each against the fake directly, then through the gateway):
 *   ns-c1      non-streaming chat, 1 connection: median / p99 latency, requests/s
 *   ns-c64     non-streaming chat, 64 connections: requests/s, gateway CPU ms per request
 *   stream-c16 16 concurrent streams of 200 chunks, no gap: events/s, time to first byte
 *   slow-c500  500 concurrent streams of 20 chunks × 50 ms: completion, events/s, peak RSS
 *   ollama-c16 the stream-c16 calls on Ollama's `/api/chat` (NDJSON) vs on `/v1/chat/completions`
 *              (SSE), both through the gateway, alternated three times: events/s ratio
 * Then ns-c64 through a second gateway with auth (a user key) and the call log on, vs the first
 * (open, call log off): the cost of accounting.
 *
 * The gateway runs as its own process (pinned to CPU 0 when taskset exists); fakes and this
 * driver share CPU 1. Env: DURATION (s, default 5), WARMUP (s, default 1), WORKLOADS.
 */
import { Agent, request } from 'undici';
import { cpuMs, HAS_TASKSET, sleep, startFakeProcess, startGatewayProcess } from './lib/processes.ts';
import { streaming as streamLoad } from './lib/stream-load.ts';

const DURATION_S = Number(process.env.DURATION ?? 5);
const WARMUP_S = Number(process.env.WARMUP ?? 1);
const WORKLOADS = (process.env.WORKLOADS ?? 'ns-c1 ns-c64 stream-c16 slow-c500 ollama-c16 accounting').split(/\s+/);


// ───────────────────────────── load drivers

interface Target { name: string; base: string; model: string; headers: Record<string, string>; pid?: number }

const CHAT_BODY = (model: string, stream: boolean) =>
  JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'Say something short.' }] });

interface NsResult { rps: number; p50: number; p99: number; cpuMsPerReq?: number; errors: number }

async function nonStreaming(t: Target, connections: number): Promise<NsResult> {
  const agent = new Agent({ connections, pipelining: 1 });
  const body = CHAT_BODY(t.model, false);
  const headers = { 'content-type': 'application/json', ...t.headers };
  const latencies: number[] = [];
  let errors = 0;
  let measuring = false;
  let stop = false;
  const worker = async () => {
    while (!stop) {
      const start = performance.now();
      try {
        const res = await request(`${t.base}/v1/chat/completions`, { method: 'POST', headers, body, dispatcher: agent });
        await res.body.text();
        if (res.statusCode !== 200) errors++;
      } catch {
        errors++;
      }
      if (measuring) latencies.push(performance.now() - start);
    }
  };
  const workers = Array.from({ length: connections }, worker);
  await sleep(WARMUP_S * 1000);
  const cpuBefore = t.pid ? cpuMs(t.pid) : 0;
  measuring = true;
  const started = performance.now();
  await sleep(DURATION_S * 1000);
  measuring = false;
  const elapsed = (performance.now() - started) / 1000;
  const cpuAfter = t.pid ? cpuMs(t.pid) : 0;
  stop = true;
  await Promise.all(workers);
  await agent.close();
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / elapsed,
    p50: latencies[Math.floor(latencies.length * 0.5)],
    p99: latencies[Math.floor(latencies.length * 0.99)],
    cpuMsPerReq: t.pid ? (cpuAfter - cpuBefore) / latencies.length : undefined,
    errors,
  };
}

/** Chat streams through `t` (see lib/stream-load.ts). */
const streaming = (t: Target, concurrency: number, loop: boolean) =>
  streamLoad({ url: `${t.base}/v1/chat/completions`, headers: t.headers, body: CHAT_BODY(t.model, true), pid: t.pid }, concurrency, loop ? DURATION_S : 0);

/** The same chat streams on Ollama's API through `t`: NDJSON lines, one per event. */
const ollamaStreaming = (t: Target, concurrency: number) =>
  streamLoad(
    {
      url: `${t.base}/api/chat`,
      headers: t.headers,
      body: CHAT_BODY(t.model, true),
      pid: t.pid,
      framing: 'ndjson',
    },
    concurrency,
    DURATION_S,
  );

/** Drives a few thousand requests through a fresh gateway so the JIT has done its work before measuring. */
async function warmUp(t: Target, requests = 4000): Promise<void> {
  const agent = new Agent({ connections: 16 });
  const body = CHAT_BODY(t.model, false);
  const headers = { 'content-type': 'application/json', ...t.headers };
  let left = requests;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (left-- > 0) await (await request(`${t.base}/v1/chat/completions`, { method: 'POST', headers, body, dispatcher: agent })).body.text();
  }));
  await agent.close();
}

// ───────────────────────────── the run

const mean = (runs: NsResult[]): NsResult => ({
  rps: avg(runs.map((r) => r.rps)),
  p50: avg(runs.map((r) => r.p50)),
  p99: avg(runs.map((r) => r.p99)),
  cpuMsPerReq: avg(runs.map((r) => r.cpuMsPerReq ?? NaN)),
  errors: runs.reduce((n, r) => n + r.errors, 0),
});
const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const fmt = (n: number | undefined, d = 2) => (n === undefined || Number.isNaN(n) ? '—' : n.toFixed(d));

async function main(): Promise<void> {
  console.log(`bench: ${DURATION_S}s per workload, warmup ${WARMUP_S}s, taskset ${HAS_TASKSET ? 'on (gateway CPU 0, fakes+driver CPU 1)' : 'off'}`);
  const fakes = {
    ns: await startFakeProcess(8, 0),
    stream: await startFakeProcess(200, 0),
    slow: await startFakeProcess(20, 20),
  };
  const plain = await startGatewayProcess('plain', fakes, ['call_log: false', 'max_parked: 1000']);
  const direct = (fake: string): Target => ({ name: 'direct', base: fake, model: 'bench', headers: {} });
  const through = (backend: string, gw = plain, headers: Record<string, string> = {}): Target =>
    ({ name: 'gateway', base: gw.url, model: `${backend}/bench`, headers, pid: gw.pid });
  const rows: string[] = [];
  await warmUp(through('ns'));

  if (WORKLOADS.includes('ns-c1')) {
    const d = await nonStreaming(direct(fakes.ns), 1);
    const g = await nonStreaming(through('ns'), 1);
    rows.push(`| ns-c1 | p50 ${fmt(d.p50)} ms, p99 ${fmt(d.p99)} ms, ${fmt(d.rps, 0)} req/s | p50 ${fmt(g.p50)} ms, p99 ${fmt(g.p99)} ms, ${fmt(g.rps, 0)} req/s, ${fmt(g.cpuMsPerReq, 3)} CPU ms/req | added p50 **${fmt(g.p50 - d.p50, 3)} ms**, rps ×${fmt(g.rps / d.rps)} |`);
  }
  if (WORKLOADS.includes('ns-c64')) {
    const d = await nonStreaming(direct(fakes.ns), 64);
    const g = await nonStreaming(through('ns'), 64);
    rows.push(`| ns-c64 | ${fmt(d.rps, 0)} req/s, p99 ${fmt(d.p99)} ms | ${fmt(g.rps, 0)} req/s, p99 ${fmt(g.p99)} ms, ${fmt(g.cpuMsPerReq, 3)} CPU ms/req, errors ${g.errors} | rps ×**${fmt(g.rps / d.rps)}** |`);
  }
  if (WORKLOADS.includes('stream-c16')) {
    const d = await streaming(direct(fakes.stream), 16, true);
    const g = await streaming(through('stream'), 16, true);
    rows.push(`| stream-c16 | ${fmt(d.eventsPerS, 0)} ev/s, ttfb ${fmt(d.ttfbP50)} ms | ${fmt(g.eventsPerS, 0)} ev/s, ttfb ${fmt(g.ttfbP50)} ms | events/s ×**${fmt(g.eventsPerS / d.eventsPerS)}**, ttfb +${fmt(g.ttfbP50 - d.ttfbP50)} ms |`);
  }
  if (WORKLOADS.includes('slow-c500')) {
    const d = await streaming(direct(fakes.slow), 500, false);
    const g = await streaming(through('slow'), 500, false);
    rows.push(`| slow-c500 | ${d.completed}/${d.started} complete, ${fmt(d.eventsPerS, 0)} ev/s | ${g.completed}/${g.started} complete, ${fmt(g.eventsPerS, 0)} ev/s, peak RSS ${fmt(g.peakRssMb, 0)} MB | events/s ×**${fmt(g.eventsPerS / d.eventsPerS)}** |`);
  }
  if (WORKLOADS.includes('ollama-c16')) {
    const sse: number[] = [];
    const ndjson: number[] = [];
    for (let round = 0; round < 3; round++) {
      sse.push((await streaming(through('stream'), 16, true)).eventsPerS);
      ndjson.push((await ollamaStreaming(through('stream'), 16)).eventsPerS);
    }
    const s = avg(sse);
    const o = avg(ndjson);
    rows.push(
      `| ollama-c16 | ${fmt(s, 0)} ev/s on /v1/chat/completions (SSE) | ${fmt(o, 0)} ev/s on /api/chat (NDJSON) ` +
        `| NDJSON ÷ SSE ×**${fmt(o / s)}** (means of 3 alternated runs) |`,
    );
  }
  if (WORKLOADS.includes('accounting')) {
    const accounted = await startGatewayProcess('accounted', fakes, ['call_log: true', 'api_key: bench-master-key-000000']);
    const created = await fetch(`${accounted.url}/admin/api/users`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer bench-master-key-000000' },
      body: JSON.stringify({ name: 'bench', quota_req_day: 100000000 }),
    }).then((r) => r.json() as Promise<{ key: string }>);
    await warmUp(through('ns', accounted, { authorization: `Bearer ${created.key}` }));
    // alternate off/on twice so JIT warm-up and drift do not favour either side
    const offRuns: NsResult[] = [];
    const onRuns: NsResult[] = [];
    for (let round = 0; round < 2; round++) {
      offRuns.push(await nonStreaming(through('ns'), 64));
      onRuns.push(await nonStreaming(through('ns', accounted, { authorization: `Bearer ${created.key}` }), 64));
    }
    const off = mean(offRuns);
    const on = mean(onRuns);
    const logged = await fetch(`${accounted.url}/admin/api/stats?group=backend`, { headers: { authorization: 'Bearer bench-master-key-000000' } })
      .then((r) => r.json() as Promise<{ data: { key: string; calls: number }[] }>);
    const calls = logged.data.reduce((n, r) => n + r.calls, 0);
    rows.push(`| ns-c64 accounting | off (open, no call log): ${fmt(off.rps, 0)} req/s, ${fmt(off.cpuMsPerReq, 3)} CPU ms/req | on (user key + quota + call log): ${fmt(on.rps, 0)} req/s, ${fmt(on.cpuMsPerReq, 3)} CPU ms/req, ${calls} rows logged | rps ×**${fmt(on.rps / off.rps)}** |`);
  }
  console.log('\n| workload | direct | through the gateway | ratio |\n|---|---|---|---|');
  for (const r of rows) console.log(r);
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
