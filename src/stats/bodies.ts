/**
 * Captured bodies: the cap, gzip and back (stored: the gzip of the capped bytes, the full size).
 * Gzip runs on a worker thread of its own: async zlib here costs this thread ~30 µs per
 * few-KiB body, posting it ~2 µs (docs/decisions.md). The worker maps bodies to their gzip, in
 * order, and nothing else; if it cannot run, async zlib here takes over.
 */
import { Worker } from 'node:worker_threads';
import { gunzipSync, gzip, gzipSync, constants as zlib } from 'node:zlib';

/** Bytes kept per side (request, response) before compression. */
export const BODY_CAP_BYTES = 256 * 1024;

export interface CappedBody {
  /** The body, cut to the cap with a readable marker at its end when it was longer. */
  kept: Buffer;
  /** Size of the body before the cap. */
  bytes: number;
}

const LEVEL = zlib.Z_BEST_SPEED;

/** The worker: bodies in, their gzip out, each in a buffer of its own (transferred, not copied). */
const WORKER = `
const { parentPort } = require('node:worker_threads');
const { gzipSync } = require('node:zlib');
parentPort.on('message', (bodies) => {
  if (bodies === 'stop') return parentPort.close();
  const gz = bodies.map((b) => b && new Uint8Array(gzipSync(b, { level: ${LEVEL} })));
  parentPort.postMessage(gz, gz.filter(Boolean).map((g) => g.buffer));
});`;

type Bodies = (Buffer | null)[];

export class BodyCompressor {
  /** Started by the first body; null before, and for good once it failed. */
  private worker: Worker | null = null;
  private failed = false;
  /** Bodies posted, oldest first (the worker answers in order). */
  private readonly waiting: { bodies: Bodies; resolve: (gz: Bodies) => void; reject: (err: unknown) => void }[] = [];

  /** The gzip of each body (null stays null). */
  compress(bodies: Bodies): Promise<Bodies> {
    const worker = this.started();
    if (!worker) return gzipHere(bodies);
    return new Promise((resolve, reject) => {
      this.waiting.push({ bodies, resolve, reject });
      const copies = bodies.map((b) => b && new Uint8Array(b)); // buffers of their own, to transfer
      worker.postMessage(
        copies,
        copies.flatMap((c) => (c ? [c.buffer] : [])),
      );
    });
  }

  /**
   * Stops the worker; bodies still waiting for it are compressed here, so no promise is left
   * hanging. The worker is asked to stop after its current batch, never terminated: on Node 20
   * a thread terminated inside gzipSync can abort the whole process ("close before init").
   */
  close(): void {
    const worker = this.worker;
    this.stopUsing();
    worker?.postMessage('stop');
  }

  private stopUsing(): void {
    [this.worker, this.failed] = [null, true];
    for (const w of this.waiting.splice(0)) gzipHere(w.bodies).then(w.resolve, w.reject);
  }

  private started(): Worker | null {
    if (this.worker || this.failed) return this.worker;
    const worker = (this.worker = new Worker(WORKER, { eval: true, execArgv: [] }));
    worker.unref();
    worker.on('message', (gz: (Uint8Array | null)[]) => {
      this.waiting.shift()?.resolve(gz.map((g) => g && Buffer.from(g.buffer, g.byteOffset, g.byteLength)));
    });
    const gone = () => {
      if (this.worker === worker) this.stopUsing();
    };
    worker.on('error', gone).on('exit', gone);
    return worker;
  }
}

/** Async zlib on this thread: the fallback. */
function gzipHere(bodies: Bodies): Promise<Bodies> {
  return Promise.all(
    bodies.map(
      (b) =>
        b &&
        new Promise<Buffer>((resolve, reject) => {
          gzip(b, { level: LEVEL }, (err, gz) => (err ? reject(err) : resolve(gz)));
        }),
    ),
  );
}

/** A string or bytes capped at `cap` (the marker stays within it); null for anything else. */
export function capBody(body: unknown, cap = BODY_CAP_BYTES): CappedBody | null {
  let buf: Buffer;
  if (typeof body === 'string') buf = Buffer.from(body, 'utf8');
  else if (body instanceof Uint8Array) buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  else return null;
  if (buf.length <= cap) return { kept: buf, bytes: buf.length };
  const marker = Buffer.from(truncationMarker(buf.length), 'utf8');
  return { kept: Buffer.concat([buf.subarray(0, Math.max(0, cap - marker.length)), marker]), bytes: buf.length };
}

export const gzipBodySync = (body: Buffer): Buffer => gzipSync(body, { level: LEVEL });

export function unpackBody(gz: Buffer | null): Buffer | null {
  return gz ? gunzipSync(gz) : null;
}

export function truncationMarker(totalBytes: number): string {
  return `\n…[truncated by llm-gateway: body was ${totalBytes} bytes]`;
}
