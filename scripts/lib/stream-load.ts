/**
 * The streaming load driver of the benchmarks: `concurrency` streams at once, in a closed loop
 * for `durationS` seconds (0 = one wave ramped 50 per 100 ms), counting events — SSE events
 * (blank-line terminated blocks), or NDJSON lines with `framing: 'ndjson'` — and the time to the
 * first body byte.
 */
import { Agent, request } from 'undici';
import { cpuMs, peakRssMb, sleep } from './processes.ts';

export interface StreamTarget {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The serving process, for its peak RSS. */
  pid?: number;
  /** How events are framed on the wire: SSE (default) or NDJSON (Ollama's API). */
  framing?: 'sse' | 'ndjson';
}

export interface StreamResult {
  eventsPerS: number;
  ttfbP50: number;
  completed: number;
  started: number;
  peakRssMb?: number;
  /** CPU time of the serving process per event received, in µs (with `pid`). */
  cpuUsPerEvent?: number;
}

export async function streaming(t: StreamTarget, concurrency: number, durationS: number): Promise<StreamResult> {
  const agent = new Agent({ connections: concurrency, pipelining: 1 });
  const headers = { 'content-type': 'application/json', ...t.headers };
  const separator = t.framing === 'ndjson' ? '\n' : '\n\n';
  let events = 0;
  let completed = 0;
  let started = 0;
  const ttfbs: number[] = [];
  let stop = false;
  const one = async () => {
    started++;
    const t0 = performance.now();
    const res = await request(t.url, { method: 'POST', headers, body: t.body, dispatcher: agent });
    let first = true;
    let tail = '';
    for await (const chunk of res.body) {
      if (first) { ttfbs.push(performance.now() - t0); first = false; }
      const text = tail + (chunk as Buffer).toString('latin1');
      let idx = 0;
      for (;;) {
        const next = text.indexOf(separator, idx);
        if (next < 0) break;
        events++;
        idx = next + separator.length;
      }
      tail = text.slice(idx);
    }
    if (tail === '' && res.statusCode === 200) completed++;
  };
  const t0 = performance.now();
  const cpuBefore = t.pid ? cpuMs(t.pid) : 0;
  if (durationS > 0) {
    const worker = async () => { while (!stop) await one().catch(() => undefined); };
    const workers = Array.from({ length: concurrency }, worker);
    await sleep(durationS * 1000);
    stop = true;
    await Promise.all(workers);
  } else {
    const all: Promise<void>[] = [];
    for (let i = 0; i < concurrency; i++) {
      all.push(one().catch(() => undefined));
      if (i % 50 === 49) await sleep(100);
    }
    await Promise.all(all);
  }
  const elapsed = (performance.now() - t0) / 1000;
  const cpuUsPerEvent = t.pid && events ? ((cpuMs(t.pid) - cpuBefore) * 1000) / events : undefined;
  await agent.close();
  ttfbs.sort((a, b) => a - b);
  return {
    eventsPerS: events / elapsed, ttfbP50: ttfbs[Math.floor(ttfbs.length / 2)], completed, started,
    peakRssMb: t.pid ? peakRssMb(t.pid) : undefined, cpuUsPerEvent,
  };
}
