/**
 * npm run bench:cluster — what cluster mode adds per call, side by side in one run on loopback:
 * non-streaming chat through a single gateway (no cluster) and through one instance of a
 * two-instance cluster sharing a loopback redis-server (the other instance idle but subscribed),
 * alternated RUNS times (default 3). Every call takes and releases a shared slot (the backend's
 * cap is 256, so the ledger is exercised, never the limit).
 *   c1   1 connection:   p50 / p99 latency; target: cluster p50 ≤ single + 0.3 ms
 *   c64  64 connections: requests/s;        target: cluster ≥ 0.8× single
 * Gateways are pinned to CPU 0 when taskset exists; Redis, the fake and this driver to CPU 1.
 * Env: DURATION (s per measurement, default 5), RUNS.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { cpuMs, HAS_TASKSET, sleep, startFakeProcess, startGatewayProcess } from './lib/processes.ts';

const DURATION_S = Number(process.env.DURATION ?? 5);
const RUNS = Number(process.env.RUNS ?? 3);
const BODY = JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'Say something short.' }] });

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

async function startRedis(): Promise<string> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-bench-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const cmd = HAS_TASKSET ? 'taskset' : 'redis-server';
  const child = spawn(cmd, HAS_TASKSET ? ['-c', '1', 'redis-server', ...args] : args, { stdio: 'ignore' });
  process.on('exit', () => child.kill('SIGKILL'));
  await sleep(300);
  return `redis://127.0.0.1:${port}`;
}

interface Result {
  /** Gateway CPU (ms) per request over the measurement. */
  cpu: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(base: string, pid: number, connections: number): Promise<Result> {
  const agent = new Agent({ connections });
  const headers = { 'content-type': 'application/json' };
  const latencies: number[] = [];
  let errors = 0;
  let measuring = false;
  let stop = false;
  const worker = async () => {
    while (!stop) {
      const start = performance.now();
      try {
        const res = await request(`${base}/v1/chat/completions`, {
          method: 'POST',
          headers,
          body: BODY,
          dispatcher: agent,
        });
        await res.body.text();
        if (res.statusCode !== 200) errors++;
      } catch {
        errors++;
      }
      if (measuring) latencies.push(performance.now() - start);
    }
  };
  const workers = Array.from({ length: connections }, worker);
  await sleep(1000);
  measuring = true;
  const cpuBefore = cpuMs(pid);
  const started = performance.now();
  await sleep(DURATION_S * 1000);
  measuring = false;
  const elapsed = (performance.now() - started) / 1000;
  const cpu = (cpuMs(pid) - cpuBefore) / Math.max(1, latencies.length);
  stop = true;
  await Promise.all(workers);
  await agent.close();
  latencies.sort((a, b) => a - b);
  return {
    cpu,
    rps: latencies.length / elapsed,
    p50: latencies[Math.floor(latencies.length * 0.5)],
    p99: latencies[Math.floor(latencies.length * 0.99)],
    errors,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const fake = await startFakeProcess(1, 0);
  const redisUrl = await startRedis();
  const common = ['max_concurrent: 256', 'park_timeout_s: 30'];
  const single = await startGatewayProcess('single', { box: fake }, common);
  const secretKey = randomBytes(32); // the instances of one cluster share secret.key
  const member = (id: string) => [...common, `cluster: { redis_url: "${redisUrl}", instance_id: ${id} }`];
  const clustered = await startGatewayProcess('cluster-a', { box: fake }, member('a'), { secretKey });
  await startGatewayProcess('cluster-b', { box: fake }, member('b'), { secretKey });
  // a few thousand calls through each first, so the JIT has done its work before anything is measured
  for (const gw of [single, clustered]) await load(gw.url, gw.pid, 16);
  const rows: Record<string, Result[]> = { 'single c1': [], 'cluster c1': [], 'single c64': [], 'cluster c64': [] };
  for (let run = 0; run < RUNS; run++) {
    for (const c of [1, 64]) {
      rows[`single c${c}`].push(await load(single.url, single.pid, c));
      rows[`cluster c${c}`].push(await load(clustered.url, clustered.pid, c));
    }
  }
  console.log(`pinned: ${HAS_TASKSET}  runs: ${RUNS}  duration: ${DURATION_S} s each (medians over runs)`);
  console.log('workload        p50 ms   p99 ms      req/s  CPU ms/req  errors');
  for (const [name, results] of Object.entries(rows)) {
    const at = (pick: (r: Result) => number, digits: number, width: number) =>
      median(results.map(pick)).toFixed(digits).padStart(width);
    const errors = String(results.reduce((n, r) => n + r.errors, 0)).padStart(7);
    const line = [name.padEnd(14), at((r) => r.p50, 3, 7), at((r) => r.p99, 3, 8), at((r) => r.rps, 0, 10)];
    line.push(
      at((r) => r.cpu, 3, 10),
      errors,
    );
    console.log(line.join('  '));
  }
  const p50 = (k: string) => median(rows[k].map((r) => r.p50));
  const rps = (k: string) => median(rows[k].map((r) => r.rps));
  console.log(`c1 added p50: ${(p50('cluster c1') - p50('single c1')).toFixed(3)} ms (target ≤ +0.3 ms)`);
  console.log(`c64 throughput: ${(rps('cluster c64') / rps('single c64')).toFixed(2)}× single (target ≥ 0.8×)`);
  const cpu = (k: string) => median(rows[k].map((r) => r.cpu));
  console.log(`c64 gateway CPU per call: ${(cpu('cluster c64') / cpu('single c64')).toFixed(2)}× single`);
  process.exit(0);
}

void main();
