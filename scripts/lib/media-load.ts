/**
 * The media-job client of bench-media.ts, as a client would drive the gateway over HTTP:
 * `POST /v1/generations {mode: 'async'}` → 202 {job_id}, `GET /v1/jobs/{id}/events` (SSE) to
 * the terminal event, then `GET /v1/jobs/{id}/result/0`; with the times it saw on the way
 * (performance.now() ms). Also: cancels, percentiles, and an overlap count of time intervals.
 */
import { Agent, request } from 'undici';

export interface JobTimes {
  id: string;
  /** Before the POST was sent. */
  submitAt: number;
  /** 202 received. */
  acceptedAt: number;
  /** The `running` event arrived; null when the job never ran. */
  runningAt: number | null;
  /** The first SSE event was `queued` (the job was seen parked). */
  sawQueued: boolean;
  /** The terminal event arrived. */
  endAt: number;
  status: string;
  /** The last byte of result 0 arrived. */
  resultAt: number;
  resultBytes: number;
  resultStatus: number;
}

export function mediaAgent(connections: number): Agent {
  return new Agent({ connections, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
}

/** Submits one async generation; the job id and the time the 202 arrived. */
export async function submit(base: string, agent: Agent, model: string, prompt: string): Promise<{ id: string; acceptedAt: number }> {
  const res = await request(`${base}/v1/generations`, {
    method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt, mode: 'async' }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 202) throw new Error(`POST /v1/generations answered ${res.statusCode}: ${text.slice(0, 300)}`);
  return { id: (JSON.parse(text) as { job_id: string }).job_id, acceptedAt: performance.now() };
}

/** Follows the job's SSE stream to its terminal event: when `running` and the end arrived. */
export async function follow(base: string, agent: Agent, id: string): Promise<{ runningAt: number | null; sawQueued: boolean; endAt: number; status: string }> {
  const res = await request(`${base}/v1/jobs/${id}/events`, { dispatcher: agent, headers: { accept: 'text/event-stream' } });
  if (res.statusCode !== 200) throw new Error(`GET /v1/jobs/${id}/events answered ${res.statusCode}: ${await res.body.text()}`);
  let runningAt: number | null = null;
  let first: string | undefined;
  let status = 'unended';
  let endAt = NaN;
  let buffer = '';
  for await (const chunk of res.body) {
    buffer += (chunk as Buffer).toString('utf8');
    let at: number;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      const type = /^event: (.+)$/m.exec(block)?.[1];
      if (!type) continue; // a keep-alive comment
      first ??= type;
      if (type === 'running' && runningAt === null) runningAt = performance.now();
      if (type === 'done' || type === 'failed' || type === 'cancelled') {
        endAt = performance.now();
        status = (JSON.parse(/^data: (.+)$/m.exec(block)![1]) as { job: { status: string } }).job.status;
      }
    }
  }
  return { runningAt, sawQueued: first === 'queued', endAt, status };
}

/** Reads result `n` to its last byte. */
export async function fetchResult(base: string, agent: Agent, id: string, n = 0): Promise<{ status: number; bytes: number; at: number }> {
  const res = await request(`${base}/v1/jobs/${id}/result/${n}`, { dispatcher: agent });
  const bytes = (await res.body.arrayBuffer()).byteLength;
  return { status: res.statusCode, bytes, at: performance.now() };
}

/** One job the whole way: submit, follow, result. */
export async function runJob(base: string, agent: Agent, model: string, prompt: string): Promise<JobTimes> {
  const submitAt = performance.now();
  const { id, acceptedAt } = await submit(base, agent, model, prompt);
  const ev = await follow(base, agent, id);
  const result = ev.status === 'done' ? await fetchResult(base, agent, id) : { status: 0, bytes: 0, at: NaN };
  return { id, submitAt, acceptedAt, ...ev, resultAt: result.at, resultBytes: result.bytes, resultStatus: result.status };
}

export async function cancelJob(base: string, agent: Agent, id: string): Promise<string> {
  const res = await request(`${base}/v1/jobs/${id}/cancel`, { method: 'POST', dispatcher: agent });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`cancel ${id} answered ${res.statusCode}: ${text.slice(0, 200)}`);
  return (JSON.parse(text) as { status: string }).status;
}

/** Runs `fn` over `items`, `width` at a time, results in order. */
export async function pool<T, R>(items: T[], width: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }));
  return out;
}

/** Nearest-rank percentile (p in 0..100) of unsorted numbers. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Most intervals [start, end) open at once (an end at the same instant as a start closes first). */
export function maxOverlap(intervals: { start: number; end: number }[]): number {
  const edges = intervals.flatMap((i) => [[i.start, 1], [i.end, -1]] as const);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let most = 0;
  for (const [, d] of edges) {
    open += d;
    most = Math.max(most, open);
  }
  return most;
}

export async function settleGc(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const MiB = 1024 * 1024;
