/**
 * npm run bench:ollama — Ollama NDJSON streams through the gateway's Ollama ⇄ chat bridge, side
 * by side with the plain chat relay of the same upstream stream, in one run on loopback.
 *
 *   16 concurrent `POST /api/chat` streams on a chat backend (200 chunks, no gap), counted as
 *   NDJSON lines, vs 16 concurrent `POST /v1/chat/completions` streams of the same calls,
 *   counted as SSE events: events/s (target ≥ 0.95×), time to first byte, gateway CPU per event.
 * The pair alternates twice and reports the means. The gateway runs as its own process with
 * the call log on (pinned to CPU 0 when taskset exists); the fake and this driver share CPU 1.
 * Env: DURATION (s, default 5).
 */
import { HAS_TASKSET, startFakeProcess, startGatewayProcess } from './lib/processes.ts';
import { streaming, type StreamResult, type StreamTarget } from './lib/stream-load.ts';

const DURATION_S = Number(process.env.DURATION ?? 5);
const CONCURRENCY = 16;
const CHUNKS = 200;
const messages = [{ role: 'user', content: 'Say something short.' }];

const mean = (runs: StreamResult[]): StreamResult => ({
  eventsPerS: avg(runs.map((r) => r.eventsPerS)),
  ttfbP50: avg(runs.map((r) => r.ttfbP50)),
  completed: runs.reduce((n, r) => n + r.completed, 0),
  cpuUsPerEvent: avg(runs.map((r) => r.cpuUsPerEvent ?? NaN)),
  started: runs.reduce((n, r) => n + r.started, 0),
});
const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const fmt = (n: number | undefined, d = 2) => (n === undefined || Number.isNaN(n) ? '—' : n.toFixed(d));

async function main(): Promise<void> {
  console.log(
    `bench:ollama: ${DURATION_S}s per run, 2 rounds, ${CONCURRENCY} streams of ${CHUNKS} chunks, ` +
      `taskset ${HAS_TASKSET ? 'on' : 'off'}`,
  );
  const chatFake = await startFakeProcess(CHUNKS, 0, 'vllm');
  const key = 'bench-master-key-ollama';
  const gw = await startGatewayProcess('ollama', { chat: chatFake }, ['call_log: true', `api_key: ${key}`]);
  const headers = { authorization: `Bearer ${key}` };
  const relay: StreamTarget = {
    url: `${gw.url}/v1/chat/completions`,
    headers,
    pid: gw.pid,
    body: JSON.stringify({ model: 'chat/bench', stream: true, messages }),
  };
  const ollama: StreamTarget = {
    url: `${gw.url}/api/chat`,
    headers,
    pid: gw.pid,
    framing: 'ndjson',
    body: JSON.stringify({ model: 'chat/bench', messages, options: { temperature: 0.7 } }),
  };
  // warm the JIT on both paths before measuring
  await streaming(relay, CONCURRENCY, 2);
  await streaming(ollama, CONCURRENCY, 2);
  const rs: StreamResult[] = [];
  const os: StreamResult[] = [];
  for (let round = 0; round < 2; round++) {
    rs.push(await streaming(relay, CONCURRENCY, DURATION_S));
    os.push(await streaming(ollama, CONCURRENCY, DURATION_S));
  }
  const [r, o] = [mean(rs), mean(os)];
  console.log('\n| workload | chat relay (SSE) | Ollama on chat (NDJSON) | ratio |\n|---|---|---|---|');
  const cell = (x: StreamResult, unit: string) =>
    `${fmt(x.eventsPerS, 0)} ${unit}/s, ttfb ${fmt(x.ttfbP50)} ms, ${x.completed}/${x.started} complete, ` +
    `gateway CPU ${fmt(x.cpuUsPerEvent)} µs/${unit === 'ev' ? 'event' : 'line'}`;
  const ratio = `events/s ×**${fmt(o.eventsPerS / r.eventsPerS)}** (≥ 0.95)`;
  console.log(`| c${CONCURRENCY}, ${CHUNKS} chunks | ${cell(r, 'ev')} | ${cell(o, 'lines')} | ${ratio} |`);
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
