/**
 * The writer-thread alternative to the call log's main-thread writes, for bench-calllog.ts
 * only (docs/decisions.md compares the two). The main thread keeps what it must (ids, quota
 * counters, the queue) and posts each slice of the queue to a worker as plain objects — rows
 * and raw capped bodies, `postMessage` and nothing else; the worker gzips the bodies
 * (synchronously, it has nothing else to do) and runs the INSERT on its own connection.
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { CallsRepo, storedCall, type CallWrite, type StoredCall } from '../../src/store/calls-repo.ts';
import { capBody, gzipBodySync } from '../../src/stats/bodies.ts';
import { dayUsageOf, QuotaGate } from '../../src/stats/quota.ts';
import type { CallRecord } from '../../src/stats/record.ts';

/** Node 20 applies tsx's loader hooks to no worker: the thread registers tsx itself. */
const BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
import('tsx/esm/api').then(({ register }) => { register(); return import(workerData.entry); });
`;

const SLICE_ROWS = 250;

/** What one queued call posts: its row, quota usage and raw capped bodies. */
interface Posted extends Omit<CallWrite, 'bodies'> {
  request: Uint8Array | null;
  response: Uint8Array | null;
  request_bytes: number | null;
  response_bytes: number | null;
}

export class WorkerCallLog {
  readonly quotas = new QuotaGate();
  private readonly worker: Worker;
  private readonly timer: NodeJS.Timeout;
  private queue: Posted[] = [];
  private nextId = 1;
  private outstanding = 0;
  private readonly opts: { flushMs: number; captureBodies: boolean };

  constructor(storeDir: string, opts: { flushMs: number; captureBodies: boolean }) {
    this.opts = opts;
    CallsRepo.open(storeDir).close(); // created and migrated before the worker opens it
    this.worker = new Worker(BOOTSTRAP, { eval: true, workerData: { entry: import.meta.url, storeDir } });
    this.worker.on('message', (n: number) => (this.outstanding -= n));
    this.worker.on('error', (err) => {
      throw err;
    });
    this.timer = setInterval(() => void this.postInSlices(), opts.flushMs).unref();
  }

  record(rec: CallRecord): void {
    const usage = dayUsageOf(rec);
    if (usage) this.quotas.count(usage);
    const request = this.opts.captureBodies ? capBody(rec.request_body) : null;
    const response = this.opts.captureBodies ? capBody(rec.response_body) : null;
    this.queue.push({
      row: storedCall(rec, this.nextId++), usage, request: request?.kept ?? null, response: response?.kept ?? null,
      request_bytes: request?.bytes ?? null, response_bytes: response?.bytes ?? null,
    });
  }

  /** Posts the queue, a slice per event-loop turn. */
  private async postInSlices(): Promise<void> {
    while (this.queue.length > 0) {
      const slice = this.queue.slice(0, SLICE_ROWS);
      this.queue = this.queue.slice(SLICE_ROWS);
      this.outstanding += slice.length;
      this.worker.postMessage(slice);
      await new Promise((r) => setImmediate(r));
    }
  }

  /** Posts what is left and resolves once the worker wrote it. */
  async drained(): Promise<number> {
    await this.postInSlices();
    while (this.outstanding > 0) await new Promise((r) => setTimeout(r, 5));
    return this.nextId - 1;
  }

  close(): void {
    clearInterval(this.timer);
    void this.worker.terminate();
  }
}

if (!isMainThread && parentPort && (workerData as { storeDir?: string }).storeDir) {
  const repo = CallsRepo.open((workerData as { storeDir: string }).storeDir);
  const port = parentPort;
  const buf = (u: Uint8Array | null) => (u ? gzipBodySync(Buffer.from(u.buffer, u.byteOffset, u.byteLength)) : null);
  port.on('message', (slice: Posted[]) => {
    repo.write(slice.map((p) => ({
      row: p.row as StoredCall,
      usage: p.usage,
      bodies: p.request || p.response
        ? { request: buf(p.request), response: buf(p.response), request_bytes: p.request_bytes, response_bytes: p.response_bytes }
        : null,
    })));
    port.postMessage(slice.length);
  });
}
