/**
 * End-to-end parking under load: 1,000 concurrent streaming calls through a gateway whose one
 * backend takes 4 at a time (`max_concurrent: 4`), so ~996 calls park at once. Reports that
 * every call completed (status 200, stream ended with [DONE]), how long the queue took to
 * drain, and the gateway's RSS while everything was parked and at peak.
 *   npx tsx scripts/bench-parked.ts            (CALLS=1000 CHUNKS=20 TPS=400)
 */
import { Agent, request } from 'undici';
import { peakRssMb, rssMb, sleep, startFakeProcess, startGatewayProcess } from './lib/processes.ts';

export interface ParkedRunResult {
  calls: number;
  completed: number;
  failed: number;
  maxParkedSeen: number;
  drainSeconds: number;
  rssParkedMb: number;
  rssPeakMb: number;
  idleRssMb: number;
}

export async function runParkedStreams(calls = 1000, chunks = 20, tps = 400): Promise<ParkedRunResult> {
  const fake = await startFakeProcess(chunks, tps);
  const gw = await startGatewayProcess('parked', { box: fake }, [
    'max_concurrent: 4', 'park_timeout_s: 600', `max_parked: ${calls + 100}`, 'call_log: true',
  ]);
  const idleRssMb = rssMb(gw.pid);
  const agent = new Agent({ connections: calls, pipelining: 1 });
  const body = JSON.stringify({ model: 'box/bench', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  let completed = 0;
  let failed = 0;
  const started = performance.now();
  const all = Array.from({ length: calls }, async () => {
    try {
      const res = await request(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body, dispatcher: agent,
        headersTimeout: 0, bodyTimeout: 0,
      });
      const text = await res.body.text();
      if (res.statusCode === 200 && text.trimEnd().endsWith('data: [DONE]')) completed++;
      else failed++;
    } catch {
      failed++;
    }
  });
  let maxParkedSeen = 0;
  let rssParkedMb = 0;
  const sampler = (async () => {
    while (completed + failed < calls) {
      const health = await fetch(`${gw.url}/health`).then((r) => r.json() as Promise<{ parked: { total: number } }>, () => undefined);
      if (health && health.parked.total > maxParkedSeen) {
        maxParkedSeen = health.parked.total;
        rssParkedMb = rssMb(gw.pid);
      }
      await sleep(250);
    }
  })();
  await Promise.all(all);
  const drainSeconds = (performance.now() - started) / 1000;
  await sampler;
  await agent.close();
  return { calls, completed, failed, maxParkedSeen, drainSeconds, rssParkedMb, rssPeakMb: peakRssMb(gw.pid), idleRssMb };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await runParkedStreams(Number(process.env.CALLS ?? 1000), Number(process.env.CHUNKS ?? 20), Number(process.env.TPS ?? 400));
  console.log(`\n${r.calls} concurrent streaming calls, backend max_concurrent 4:`);
  console.log(`  completed ${r.completed}/${r.calls} (failed ${r.failed}), at most ${r.maxParkedSeen} parked at once, drained in ${r.drainSeconds.toFixed(1)} s`);
  console.log(`  gateway RSS: idle ${r.idleRssMb.toFixed(0)} MB, with ${r.maxParkedSeen} parked ${r.rssParkedMb.toFixed(0)} MB, peak ${r.rssPeakMb.toFixed(0)} MB`);
  process.exit(r.completed === r.calls ? 0 : 1);
}
