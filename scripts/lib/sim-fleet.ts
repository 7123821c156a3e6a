/**
 * A small simulated llama-swap fleet for scheduling benchmarks: each box is a real
 * OpenAI-compatible HTTP server on 127.0.0.1 with one FIFO queue, `parallel` slots and one
 * model. It follows the box model of the team's scheduling benchmark (its `fleet.mjs`: FIFO,
 * parallel slots, shared rate) but is self-contained and has no swaps: every box holds the one
 * model it serves, and `GET /running` says so, as llama-swap does. Nothing outside this repo
 * is read.
 *
 * - A call's prompt is its messages' characters ÷ 4 tokens; it takes prompt ÷ `prefill`
 *   seconds, then the box writes exactly `max_tokens` tokens at `decode` tok/s.
 * - n calls running at once share the box: aggregate rate = rate × (1 + scaling·(n−1)),
 *   split evenly (prefill and decode alike).
 * - Streams get one SSE chunk per 10 ms tick with the tokens decoded in it; with
 *   `stream_options.include_usage`, usage comes in a last chunk with `choices: []`.
 *   Non-stream calls get one JSON answer with usage. A client that hangs up leaves the queue.
 *
 * Durations are homelab seconds and run at `timeScale` (0.5: a 2 s call takes 1 s of wall
 * time). The simulation advances by measured wall time, so a late tick does not slow it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SimBoxSpec {
  name: string;
  model: string;
  /** Output tokens per second of one call alone. */
  decode: number;
  /** Prompt tokens per second of one call alone. */
  prefill: number;
  /** Calls running at once (llama.cpp `--parallel`); more wait in the box's FIFO. */
  parallel: number;
  /** How much the box gains per extra call running: aggregate = rate × (1 + scaling·(n−1)). */
  scaling: number;
}

/** What the box saw of one call, in wall-clock ms (performance.now()); null = not reached. */
export interface SimCallRecord {
  box: string;
  arrive: number;
  start: number | null;
  first: number | null;
  end: number | null;
  promptTokens: number;
  outputTokens: number;
}

interface Job {
  rec: SimCallRecord;
  res: http.ServerResponse;
  stream: boolean;
  includeUsage: boolean;
  /** Homelab seconds of prefill still to do, at the one-call rate. */
  prefillLeft: number;
  decoded: number;
  sent: number;
  done: boolean;
  id: string;
}

const TICK_MS = 10;

class SimBox {
  readonly queue: Job[] = [];
  readonly running = new Set<Job>();
  url = '';
  private seq = 0;

  constructor(readonly spec: SimBoxSpec, private readonly records: SimCallRecord[]) {}

  step(now: number, dt: number): void {
    while (this.queue.length > 0 && this.running.size < this.spec.parallel) {
      const job = this.queue.shift()!;
      job.rec.start = now;
      this.running.add(job);
    }
    const n = this.running.size;
    if (n === 0) return;
    const share = (1 + this.spec.scaling * (n - 1)) / n;
    for (const job of [...this.running]) {
      let left = dt * share;
      if (job.prefillLeft > 0) {
        const used = Math.min(left, job.prefillLeft);
        job.prefillLeft -= used;
        left -= used;
      }
      if (job.prefillLeft <= 0) job.decoded = Math.min(job.rec.outputTokens, job.decoded + left * this.spec.decode);
      this.emit(job, now);
    }
  }

  private emit(job: Job, now: number): void {
    const fresh = Math.floor(job.decoded) - job.sent;
    if (fresh > 0) {
      job.rec.first ??= now;
      const content = 'tok '.repeat(fresh);
      const delta = job.sent === 0 ? { role: 'assistant', content } : { content };
      job.sent += fresh;
      if (job.stream) this.sse(job, [{ index: 0, delta, finish_reason: null }]);
    }
    if (job.sent >= job.rec.outputTokens) this.finish(job, now);
  }

  private sse(job: Job, choices: unknown[], usage?: object): void {
    if (!job.res.headersSent) {
      job.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    }
    const chunk = { id: job.id, object: 'chat.completion.chunk', created: 0, model: this.spec.model, choices,
      ...(usage ? { usage } : {}) };
    job.res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }

  private finish(job: Job, now: number): void {
    job.done = true;
    job.rec.end = now;
    this.running.delete(job);
    const { promptTokens, outputTokens } = job.rec;
    const usage = { prompt_tokens: promptTokens, completion_tokens: outputTokens,
      total_tokens: promptTokens + outputTokens };
    if (job.stream) {
      this.sse(job, [{ index: 0, delta: {}, finish_reason: 'length' }]);
      if (job.includeUsage) this.sse(job, [], usage);
      job.res.end('data: [DONE]\n\n');
      return;
    }
    const message = { role: 'assistant', content: 'tok '.repeat(outputTokens) };
    json(job.res, 200, { id: job.id, object: 'chat.completion', created: 0, model: this.spec.model,
      choices: [{ index: 0, message, finish_reason: 'length' }], usage });
  }

  private chat(body: Record<string, unknown>, res: http.ServerResponse): void {
    if (body.model !== this.spec.model) {
      const message = `model ${String(body.model)} not served here`;
      json(res, 404, { error: { message, type: 'invalid_request_error', code: 'model_not_found' } });
      return;
    }
    let chars = 0;
    for (const m of Array.isArray(body.messages) ? body.messages : []) {
      const content = (m as { content?: unknown }).content;
      chars += typeof content === 'string' ? content.length : JSON.stringify(content ?? '').length;
    }
    const rec: SimCallRecord = { box: this.spec.name, arrive: performance.now(), start: null, first: null, end: null,
      promptTokens: Math.max(1, Math.ceil(chars / 4)), outputTokens: Math.max(1, Number(body.max_tokens ?? 256)) };
    this.records.push(rec);
    const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
    const job: Job = { rec, res, stream: body.stream === true, includeUsage: streamOptions?.include_usage === true,
      prefillLeft: rec.promptTokens / this.spec.prefill, decoded: 0, sent: 0, done: false,
      id: `chatcmpl-${this.spec.name}-${++this.seq}` };
    res.on('close', () => {
      if (job.done) return;
      job.done = true;
      const queued = this.queue.indexOf(job);
      if (queued >= 0) this.queue.splice(queued, 1);
      this.running.delete(job);
    });
    this.queue.push(job);
  }

  handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      const model = { id: this.spec.model, object: 'model', created: 0, owned_by: 'llama-swap' };
      json(res, 200, { object: 'list', data: [model] });
    } else if (req.method === 'GET' && path === '/running') {
      json(res, 200, { running: [{ model: this.spec.model, state: 'ready' }] });
    } else if (req.method === 'GET' && path === '/health') {
      json(res, 200, { status: 'ok' });
    } else if (req.method === 'POST' && path === '/v1/chat/completions') {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(parts).toString('utf8'));
        } catch {
          json(res, 400, { error: { message: 'body is not JSON', type: 'invalid_request_error' } });
          return;
        }
        this.chat(body as Record<string, unknown>, res);
      });
    } else {
      json(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'invalid_request_error' } });
    }
  }
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export interface SimFleet {
  boxes: { name: string; url: string }[];
  /** Every call a box received, in arrival order. */
  records: SimCallRecord[];
  close(): Promise<void>;
}

/** Starts one loopback server per box and the shared 10 ms clock tick. */
export async function startSimFleet(specs: SimBoxSpec[], timeScale: number): Promise<SimFleet> {
  const records: SimCallRecord[] = [];
  const boxes = specs.map((spec) => new SimBox(spec, records));
  const servers: http.Server[] = [];
  for (const box of boxes) {
    const server = http.createServer((req, res) => box.handle(req, res));
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    box.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    servers.push(server);
  }
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const dt = (now - last) / 1000 / timeScale;
    last = now;
    for (const box of boxes) box.step(now, dt);
  }, TICK_MS);
  return {
    boxes: boxes.map((b) => ({ name: b.spec.name, url: b.url })),
    records,
    async close() {
      clearInterval(timer);
      for (const box of boxes) for (const job of [...box.queue, ...box.running]) job.res.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => {
        s.close(() => resolve());
        s.closeAllConnections();
      })));
    },
  };
}
