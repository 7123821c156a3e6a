/**
 * npm run bench:ui — how long every console page takes with a full log: 100,000 calls in the
 * call log and 1,000 media jobs in jobs.db (CALLS, JOBS to change). A real gateway on
 * 127.0.0.1, logged in through the form like a browser; each page fetched RUNS times (after
 * two warm-up fetches). Times are measured by the client over loopback, so they are an upper
 * bound of the server-side render time (target: under 50 ms).
 */
import { randomBytes } from 'node:crypto';
import { startFake } from '../test/fakes/index.ts';
import { startGateway } from '../test/helpers/gateway.ts';
import { UiClient } from '../test/helpers/ui.ts';
import { newJobId } from '../src/media/jobs/job-types.ts';
import type { CallRecord } from '../src/stats/record.ts';
import { TABS } from '../src/ui/tabs/list.ts';

const CALLS = Number(process.env.CALLS ?? 100_000);
const JOBS = Number(process.env.JOBS ?? 1_000);
const RUNS = Number(process.env.RUNS ?? 20);
const KEY = 'bench-ui-master-key-000';

const fake = await startFake('vllm', { models: ['qwen3-8b', 'llama-3.1-8b'] });
const gw = await startGateway(
  [
    { name: 'gpu-box', url: fake.url },
    { name: 'cloud', url: fake.url, paid: true },
  ],
  { api_key: KEY, stats_flush_ms: 50 },
);
const now = Date.now();

process.stdout.write(`filling the call log with ${CALLS.toLocaleString('en-US')} calls … `);
const sources = ['alice', 'bob', 'n8n', '10.0.0.7', 'librechat'];
const models = ['qwen3-8b', 'llama-3.1-8b', 'fast', 'smart'];
for (let i = 0; i < CALLS; i++) {
  const refused = i % 50 === 0;
  const rec: CallRecord = {
    ts: now - Math.floor((i / CALLS) * 30 * 86_400_000),
    request_id: randomBytes(8).toString('hex'),
    duration_ms: 200 + (i % 900),
    ttft_ms: refused ? null : 40 + (i % 120),
    endpoint: '/v1/chat/completions',
    source: sources[i % sources.length],
    user_id: null,
    requested_model: models[i % models.length],
    model: refused ? null : models[i % 2],
    backend: refused ? '(refused)' : i % 3 ? 'gpu-box' : 'cloud',
    status: refused ? 404 : i % 97 === 0 ? 502 : 200,
    reason: refused ? 'unknown_model' : null,
    prompt_tokens: 500 + (i % 2000),
    completion_tokens: 50 + (i % 400),
    cached_tokens: i % 4 ? 0 : 300,
    cache_write_tokens: 0,
    reasoning: null,
    cost_usd: i % 3 ? 0 : 0.0004,
    upstream_cost_usd: null,
    paid: i % 3 === 0,
  };
  gw.gateway.callLog.record(rec);
  if (i % 5000 === 4999) await new Promise((r) => setTimeout(r, 60));
}
while (gw.gateway.callLog.recent({ limit: 1, until: now - 29 * 86_400_000 }).length === 0)
  await new Promise((r) => setTimeout(r, 100));
await new Promise((r) => setTimeout(r, 1500));
process.stdout.write('done\n');

process.stdout.write(`filing ${JOBS.toLocaleString('en-US')} media jobs … `);
const store = gw.gateway.media.store;
let lastJob = '';
for (let i = 0; i < JOBS; i++) {
  const id = newJobId();
  lastJob = id;
  store.create({
    id,
    owner: `user:${i % 7}`,
    alias: i % 2 ? 'sd15' : 'flux',
    request: { prompt: `a lighthouse #${i}`, params: { seed: i } },
    createdAt: now - i * 60_000,
    expiresAt: now + 86_400_000,
  });
  store.update(id, { status: 'running', backend: 'comfy' });
  store.update(id, {
    status: i % 10 ? 'done' : 'failed',
    summary: { seed: String(i) },
    ...(i % 10 ? {} : { error: { code: 'execution_error', message: 'boom' } }),
  });
  if (i % 10)
    store.addResult(id, {
      n: 0,
      kind: 'image',
      mime: 'image/png',
      file: '0.png',
      bytes: 1234,
      sha256: 'ab'.repeat(32),
      width: 512,
      height: 512,
    });
}
process.stdout.write('done\n\n');

const ui = await UiClient.login(gw, KEY);
const lastCall = gw.gateway.callLog.recent({ limit: 1 })[0]?.id;
const pages = [
  ...TABS.map((t) => t.path),
  `/ui/calls/${lastCall}`,
  `/ui/jobs/${lastJob}`,
  '/ui/calls?status=5xx',
  '/ui/stats?range=30d',
];
const rows: string[] = [];
let worst = 0;
for (const path of pages) {
  const times: number[] = [];
  let status = 0;
  for (let i = 0; i < RUNS + 2; i++) {
    const t0 = performance.now();
    const res = await ui.get(path);
    await res.arrayBuffer();
    status = res.status;
    if (i >= 2) times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  const p95 = times[Math.min(times.length - 1, Math.floor(times.length * 0.95))];
  worst = Math.max(worst, p95);
  rows.push(`| ${path} | ${status} | ${median.toFixed(1)} | ${p95.toFixed(1)} |`);
}
console.log(
  `| page (${CALLS.toLocaleString('en-US')} calls, ${JOBS.toLocaleString('en-US')} jobs) | status | median ms | p95 ms |`,
);
console.log('|---|---|---|---|');
console.log(rows.join('\n'));
console.log(`\nworst p95: ${worst.toFixed(1)} ms (target < 50 ms)`);
await gw.close();
await fake.close();
