/**
 * npm run bench:bridges — the Anthropic Messages and Responses bridges, side by side with the
 * plain chat relay in one run, on loopback.
 *
 *   translated   16 concurrent Messages streams on a chat backend (the Messages ⇄ chat bridge)
 *                vs the plain chat relay of the same upstream stream (200 chunks, no gap):
 *                events/s (target ≥ 0.8×) and the added time to first byte (target ≤ 1 ms; also
 *                measured one stream at a time, where the fakes' CPU does not blur it)
 *   responses    16 concurrent Responses streams on a chat backend (the Responses ⇄ chat bridge)
 *                vs the same chat relay: events/s (target ≥ 0.8×), added time to first byte (≤ 1 ms)
 *   passthrough  16 concurrent Messages streams on an anthropic backend vs the same fake
 *                directly: events/s (target ≥ 0.95×)
 * Each pair alternates twice (direct/relay first) and reports the means. The gateway runs as its
 * own process with the call log on (pinned to CPU 0 when taskset exists); fakes and this driver
 * share CPU 1. Env: DURATION (s, default 5).
 */
import { ANTHROPIC_FAKE_API_KEY } from '../test/fakes/anthropic-types.ts';
import { HAS_TASKSET, startFakeProcess, startGatewayProcess } from './lib/processes.ts';
import { streaming, type StreamResult, type StreamTarget } from './lib/stream-load.ts';

const DURATION_S = Number(process.env.DURATION ?? 5);
const CONCURRENCY = 16;
const CHUNKS = 200;

const chatBody = JSON.stringify({ model: 'chat/bench', stream: true, messages: [{ role: 'user', content: 'Say something short.' }] });
const messagesBody = (model: string) => JSON.stringify({ model, max_tokens: 4096, stream: true, messages: [{ role: 'user', content: 'Say something short.' }] });
const responsesBody = JSON.stringify({ model: 'chat/bench', stream: true, input: 'Say something short.' });
const anthropicHeaders = { 'anthropic-version': '2023-06-01' };

async function pair(a: StreamTarget, b: StreamTarget): Promise<[StreamResult, StreamResult]> {
  const as: StreamResult[] = [];
  const bs: StreamResult[] = [];
  for (let round = 0; round < 2; round++) {
    as.push(await streaming(a, CONCURRENCY, DURATION_S));
    bs.push(await streaming(b, CONCURRENCY, DURATION_S));
  }
  return [mean(as), mean(bs)];
}

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
  console.log(`bench:bridges: ${DURATION_S}s per run, 2 rounds, ${CONCURRENCY} streams of ${CHUNKS} chunks, taskset ${HAS_TASKSET ? 'on' : 'off'}`);
  const chatFake = await startFakeProcess(CHUNKS, 0, 'vllm');
  const claudeFake = await startFakeProcess(CHUNKS, 0, 'anthropic');
  const key = 'bench-master-key-messages';
  const gw = await startGatewayProcess('messages', {
    chat: chatFake,
    claude: { url: claudeFake, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY },
  }, ['call_log: true', `api_key: ${key}`]);
  const auth = { authorization: `Bearer ${key}` };
  const relay: StreamTarget = { url: `${gw.url}/v1/chat/completions`, headers: auth, body: chatBody, pid: gw.pid };
  const translated: StreamTarget = { url: `${gw.url}/v1/messages`, headers: { ...auth, ...anthropicHeaders }, body: messagesBody('chat/bench'), pid: gw.pid };
  const responses: StreamTarget = { url: `${gw.url}/v1/responses`, headers: auth, body: responsesBody, pid: gw.pid };
  const direct: StreamTarget = {
    url: `${claudeFake}/v1/messages`, headers: { 'x-api-key': ANTHROPIC_FAKE_API_KEY, ...anthropicHeaders }, body: messagesBody('bench'),
  };
  const passthrough: StreamTarget = { url: `${gw.url}/v1/messages`, headers: { ...auth, ...anthropicHeaders }, body: messagesBody('claude/bench'), pid: gw.pid };

  // warm the JIT on both paths before measuring
  await streaming(relay, CONCURRENCY, 2);
  await streaming(translated, CONCURRENCY, 2);
  await streaming(responses, CONCURRENCY, 2);
  await streaming(passthrough, CONCURRENCY, 2);

  // time to first byte alone, one stream at a time (at c16 the fakes' CPU dominates it)
  const [r1, t1, x1] = [await streaming(relay, 1, DURATION_S), await streaming(translated, 1, DURATION_S), await streaming(responses, 1, DURATION_S)];
  const [r, t] = await pair(relay, translated);
  const [r2, x] = await pair(relay, responses);
  const [d, p] = await pair(direct, passthrough);
  console.log('\n| workload | baseline | through the gateway | ratio |\n|---|---|---|---|');
  console.log(`| translated c${CONCURRENCY} | chat relay: ${fmt(r.eventsPerS, 0)} ev/s, ttfb ${fmt(r.ttfbP50)} ms, ${r.completed}/${r.started} complete | Messages on chat: ${fmt(t.eventsPerS, 0)} ev/s, ttfb ${fmt(t.ttfbP50)} ms, ${t.completed}/${t.started} complete; gateway CPU ${fmt(t.cpuUsPerEvent)} µs/event vs relay ${fmt(r.cpuUsPerEvent)} | events/s ×**${fmt(t.eventsPerS / r.eventsPerS)}** (≥ 0.8), ttfb +${fmt(t.ttfbP50 - r.ttfbP50, 3)} ms (≤ 1) |`);
  console.log(`| translated c1 | chat relay: ttfb ${fmt(r1.ttfbP50, 3)} ms | Messages on chat: ttfb ${fmt(t1.ttfbP50, 3)} ms | added ttfb **${fmt(t1.ttfbP50 - r1.ttfbP50, 3)} ms** (≤ 1) |`);
  console.log(`| responses c${CONCURRENCY} | chat relay: ${fmt(r2.eventsPerS, 0)} ev/s, ttfb ${fmt(r2.ttfbP50)} ms | Responses on chat: ${fmt(x.eventsPerS, 0)} ev/s, ttfb ${fmt(x.ttfbP50)} ms, ${x.completed}/${x.started} complete; gateway CPU ${fmt(x.cpuUsPerEvent)} µs/event vs relay ${fmt(r2.cpuUsPerEvent)} | events/s ×**${fmt(x.eventsPerS / r2.eventsPerS)}** (≥ 0.8), ttfb +${fmt(x.ttfbP50 - r2.ttfbP50, 3)} ms (≤ 1) |`);
  console.log(`| responses c1 | chat relay: ttfb ${fmt(r1.ttfbP50, 3)} ms | Responses on chat: ttfb ${fmt(x1.ttfbP50, 3)} ms | added ttfb **${fmt(x1.ttfbP50 - r1.ttfbP50, 3)} ms** (≤ 1) |`);
  console.log(`| passthrough c${CONCURRENCY} | direct: ${fmt(d.eventsPerS, 0)} ev/s, ttfb ${fmt(d.ttfbP50)} ms | gateway: ${fmt(p.eventsPerS, 0)} ev/s, ttfb ${fmt(p.ttfbP50)} ms, ${p.completed}/${p.started} complete; gateway CPU ${fmt(p.cpuUsPerEvent)} µs/event | events/s ×**${fmt(p.eventsPerS / d.eventsPerS)}** (≥ 0.95) |`);
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
