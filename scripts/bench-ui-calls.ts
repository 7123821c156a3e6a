/**
 * npx tsx scripts/bench-ui-calls.ts — server-side render time of the LLM calls and Statistics
 * pages with 100,000 calls in the log (30 days, realistic fleet: helpers/calls-seed.ts,
 * recorded through the CallLog), each page rendered RUNS times through `app.inject` (routing,
 * session check, queries, templates; no socket), printing median and max ms. Then the time a
 * restarted gateway takes to build the statistics rollup from stats.db (off the request path,
 * in slices), and the longest event-loop turn while it does.
 *
 * Env: CALLS (default 100000), RUNS (default 20). The issue's bar: every page < 50 ms.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MASTER_KEY } from '../test/helpers/calls-rig.ts';
import { seedCallLog, seededCalls } from '../test/helpers/calls-seed.ts';
import { startGateway, type TestGateway } from '../test/helpers/gateway.ts';

const CALLS = Number(process.env.CALLS ?? 100_000);
const RUNS = Number(process.env.RUNS ?? 20);

/** Logs in through the form with inject; returns the cookie header of the session. */
async function login(gw: TestGateway): Promise<string> {
  const page = await gw.app.inject({ method: 'GET', url: '/ui/login' });
  const jar = new Map<string, string>();
  const keep = (headers: Record<string, unknown>) => {
    const set = headers['set-cookie'];
    for (const line of Array.isArray(set) ? set : set ? [set] : []) {
      const [pair] = String(line).split(';');
      jar.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
    }
  };
  keep(page.headers);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const res = await gw.app.inject({
    method: 'POST', url: '/ui/login', headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: csrf, key: MASTER_KEY, next: '/ui' }).toString(),
  });
  if (res.statusCode !== 303) throw new Error(`login answered ${res.statusCode}`);
  keep(res.headers);
  return cookie();
}

async function time(gw: TestGateway, cookie: string, url: string): Promise<{ median: number; max: number; bytes: number; status: number }> {
  const ms: number[] = [];
  let bytes = 0;
  let status = 0;
  for (let i = 0; i < RUNS + 2; i++) {
    const start = performance.now();
    const res = await gw.app.inject({ method: 'GET', url, headers: { cookie } });
    const took = performance.now() - start;
    if (i >= 2) ms.push(took); // two warm-up renders (template compilation, statement cache)
    bytes = res.body.length;
    status = res.statusCode;
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)], max: ms[ms.length - 1], bytes, status };
}

async function main(): Promise<void> {
  const storeDir = mkdtempSync(join(tmpdir(), 'llmgw-bench-ui-'));
  const config = { api_key: MASTER_KEY, stats_flush_ms: 50, retention_days: 0, capture_bodies: true };
  let gw = await startGateway([], config, { storeDir });
  const seedStart = performance.now();
  await seedCallLog(gw.gateway.callLog, { count: CALLS, days: 30, seed: 11 });
  console.log(`seeded ${CALLS.toLocaleString('en-US')} calls in ${Math.round(performance.now() - seedStart)} ms`);
  const log = gw.gateway.callLog;
  // one call with bodies at the cap: a 250 KiB JSON request, a 2,000-event stream
  const messages = Array.from({ length: 400 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} `.repeat(80) }));
  const events = Array.from({ length: 2_000 }, (_, i) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: ` tok${i}` } }] })}\n\n`);
  log.record({
    ...seededCalls({ count: 1, days: 0.001 })[0], request_body: JSON.stringify({ model: 'qwen3-8b', stream: true, messages }),
    response_body: `${events.join('')}data: [DONE]\n\n`,
  });
  await log.flush();
  const newest = log.recent({ limit: 60 });
  const withBodies = newest.find((c) => c.has_bodies)!.id;
  const page2 = newest[49].id;
  const rareBackend = 'mac-studio';
  const day = Date.now() - 86_400_000;
  await gw.close(); // keep the store: the restart below reads it

  // a restart: the rollup is built from stats.db in slices while the loop keeps turning
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const buildStart = performance.now();
  gw = await startGateway([], config, { storeDir });
  await gw.gateway.callLog.summary({ since: 0, until: 1, step: 'day' });
  delay.disable();
  console.log(`restart to rollup ready: ${Math.round(performance.now() - buildStart)} ms (longest event-loop stall ${(delay.max / 1e6).toFixed(1)} ms)\n`);

  try {
    const cookie = await login(gw);
    const pages = [
      '/ui/calls',
      `/ui/calls?beforeId=${page2}`,
      '/ui/calls?status=2xx',
      '/ui/calls?status=5xx',
      '/ui/calls?status=429',
      `/ui/calls?backend=${rareBackend}`,
      '/ui/calls?model=gpt-oss-120b&status=5xx',
      '/ui/calls?source=mum&status=4xx',
      '/ui/calls?backend=no-such-backend',
      `/ui/calls?since=${new Date(day).toISOString().slice(0, 16)}&source=paperless`,
      `/ui/calls/${newest.find((c) => !c.has_bodies)!.id}`,
      `/ui/calls/${withBodies}`,
      '/ui/stats?range=24h',
      '/ui/stats',
      '/ui/stats?range=30d',
      `/ui/stats?range=custom&since=${new Date(Date.now() - 89 * 86_400_000).toISOString().slice(0, 10)}`,
    ];
    let worst = 0;
    console.log(`${'page'.padEnd(62)} ${'median'.padStart(8)} ${'max'.padStart(8)} ${'KiB'.padStart(6)}`);
    for (const url of pages) {
      const t = await time(gw, cookie, url);
      if (t.status !== 200) throw new Error(`${url} answered ${t.status}`);
      if (url === '/ui/calls' && t.bytes < 8_000) throw new Error(`${url}: ${t.bytes} bytes, not a page of calls`);
      worst = Math.max(worst, t.median);
      console.log(`${url.padEnd(62)} ${t.median.toFixed(1).padStart(8)} ${t.max.toFixed(1).padStart(8)} ${(t.bytes / 1024).toFixed(0).padStart(6)}`);
    }
    console.log(`\nslowest median ${worst.toFixed(1)} ms (bar: 50 ms)`);
  } finally {
    await gw.close();
    rmSync(storeDir, { recursive: true, force: true });
  }
}

await main();
