import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { Dispatcher } from 'undici';
import { describeError } from '../backends/errors.ts';
import type { BackendError } from '../backends/types.ts';
import { SseSplitter } from './sse.ts';
import { createUsageTap, type StreamSummary } from './stream-usage.ts';

export interface RelayOptions {
  upstream: Dispatcher.ResponseData;
  reply: FastifyReply;
  /** Gateway headers to add to the client's response head. */
  headers: Record<string, string>;
  clientWantsUsage: boolean;
  promptTokenEstimate: number;
  now: () => number;
  /** 0 = no limit on the wait for the first body byte. */
  firstByteTimeoutMs: number;
  /** Longest silence between data after the first byte (stalled stream); 0 = none. */
  idleTimeoutMs: number;
  /** Keep up to this many bytes of what the client got, for the call inspector; 0 = none. */
  captureBytes: number;
}

export type RelayResult = { summary: StreamSummary; captured?: Buffer } & (
  | { kind: 'complete' }
  /** Nothing reached the client yet: the caller may try the next candidate. */
  | { kind: 'failover'; error: Omit<BackendError, 'since'> }
  | { kind: 'client_closed' }
  | { kind: 'upstream_failed'; error: Omit<BackendError, 'since'> }
);

const SSE_HEAD = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/**
 * Relays an upstream SSE stream to the client event by event, never buffering the stream:
 * each chunk's complete events are written as soon as they arrive (one write per chunk). The
 * client's response head is written with the first upstream byte, so a backend that fails
 * before sending anything can still be failed over. After that, a broken stream ends with an
 * error event and no `[DONE]`.
 */
export async function relayStream(opts: RelayOptions): Promise<RelayResult> {
  const { upstream, reply } = opts;
  const res = reply.raw;
  const splitter = new SseSplitter();
  const tap = createUsageTap({ clientWantsUsage: opts.clientWantsUsage, promptTokenEstimate: opts.promptTokenEstimate, now: opts.now });
  let headWritten = false;
  let sawDone = false;
  const captured: Buffer[] = [];
  let capturedBytes = 0;
  const firstByteTimer = opts.firstByteTimeoutMs > 0
    ? setTimeout(() => upstream.body.destroy(Object.assign(new Error(`no first byte within ${opts.firstByteTimeoutMs} ms`), { code: 'UND_ERR_HEADERS_TIMEOUT' })), opts.firstByteTimeoutMs)
    : undefined;

  // one timer for the whole stream, re-armed per chunk with refresh() (no allocation)
  let idleTimer: NodeJS.Timeout | undefined;
  const stalled = () => upstream.body.destroy(Object.assign(
    new Error(`no data for ${opts.idleTimeoutMs} ms`), { code: 'UND_ERR_BODY_TIMEOUT' },
  ));

  const writeHead = () => {
    clearTimeout(firstByteTimer);
    if (opts.idleTimeoutMs > 0) idleTimer = setTimeout(stalled, opts.idleTimeoutMs);
    reply.hijack();
    res.writeHead(200, { ...SSE_HEAD, ...opts.headers });
    headWritten = true;
  };

  const relay = async (events: ReturnType<SseSplitter['push']>) => {
    const out: Buffer[] = [];
    for (const ev of events) {
      if (sawDone) break;
      // a half event cut off by the end of the stream is garbage, unless it is the end marker
      if (ev.incomplete && ev.data !== '[DONE]') continue;
      if (ev.data === '[DONE]') sawDone = true;
      const bytes = tap.onEvent(ev);
      if (bytes) out.push(bytes);
    }
    if (!out.length) return;
    const bytes = out.length === 1 ? out[0] : joinAdjacent(out);
    if (capturedBytes < opts.captureBytes) {
      captured.push(bytes);
      capturedBytes += bytes.length;
    }
    await write(res, bytes);
  };
  const result = <T extends object>(r: T) =>
    ({ ...r, summary: tap.summary(), captured: captured.length ? Buffer.concat(captured) : undefined });

  try {
    for await (const chunk of upstream.body) {
      if (!headWritten) writeHead();
      else idleTimer?.refresh();
      await relay(splitter.push(chunk as Buffer));
      idleTimer?.refresh(); // time spent waiting for a slow client is not the backend's silence
      if (res.destroyed) throw new ClientGone();
    }
    clearTimeout(idleTimer);
    await relay(splitter.flush());
    if (!headWritten) writeHead();
    clearTimeout(idleTimer);
    if (!sawDone) {
      const error = { kind: 'upstream' as const, detail: 'the backend ended the stream without [DONE]' };
      if (!tap.summary().finishReason) {
        endWithError(res, error.detail);
        return result({ kind: 'upstream_failed' as const, error });
      }
    }
    res.end();
    return result({ kind: 'complete' as const });
  } catch (err) {
    clearTimeout(firstByteTimer);
    clearTimeout(idleTimer);
    upstream.body.destroy();
    if (err instanceof ClientGone || res.destroyed || (reply.raw.socket?.destroyed ?? false)) {
      if (!res.destroyed) res.destroy();
      return result({ kind: 'client_closed' as const });
    }
    const error = describeError(err);
    if (!headWritten) return result({ kind: 'failover' as const, error });
    endWithError(res, error.kind === 'timeout' ? 'the backend stopped sending (stream idle timeout)' : `the backend broke the stream: ${error.detail}`);
    return result({ kind: 'upstream_failed' as const, error });
  }
}

class ClientGone extends Error {}

function endWithError(res: ServerResponse, message: string): void {
  if (res.destroyed) return;
  const event = { error: { message, type: 'upstream_error', param: null, code: 'stream_interrupted' } };
  res.end(`data: ${JSON.stringify(event)}\n\n`);
}

/** Writes with backpressure: waits for 'drain' when the socket buffer is full (or the client leaves). */
function write(res: ServerResponse, bytes: Buffer): Promise<void> | void {
  if (res.write(bytes)) return;
  return new Promise<void>((resolve, reject) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', gone);
      resolve();
    };
    const gone = () => {
      res.off('drain', done);
      reject(new ClientGone());
    };
    res.once('drain', done);
    res.once('close', gone);
  });
}

/**
 * Joins buffers for one write. Events passed through untouched are adjacent views of the same
 * upstream chunk: then the result is one view over them, without copying a byte.
 */
function joinAdjacent(parts: Buffer[]): Buffer {
  const first = parts[0];
  let end = first.byteOffset + first.length;
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i];
    if (part.buffer !== first.buffer || part.byteOffset !== end) return Buffer.concat(parts);
    end += part.length;
  }
  return Buffer.from(first.buffer, first.byteOffset, end - first.byteOffset);
}
