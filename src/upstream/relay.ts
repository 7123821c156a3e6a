import type { Dispatcher } from 'undici';
import { describeError } from '../backends/errors.ts';
import type { BackendError } from '../backends/types.ts';
import { UpstreamIdleWatch } from './idle-watch.ts';
import { NdjsonSplitter } from '../wire/ndjson.ts';
import { SseSplitter } from '../wire/sse.ts';
import { ClientGone, ClientStalled, type SseResponse } from '../wire/sse-response.ts';
import type { StreamSummary } from '../wire/stream-usage.ts';
import type { StreamError, StreamFraming, StreamTranslator } from './surface.ts';

export interface RelayOptions {
  upstream: Dispatcher.ResponseData;
  sse: SseResponse;
  /** Gateway headers for the client's response head (if it is not written yet). */
  headers: Record<string, string>;
  /** The surface's translation of each upstream event (the OpenAI usage tap passes bytes through). */
  translator: StreamTranslator;
  /** The surface's last event for a stream that broke after data reached the client. */
  errorEvent: (error: StreamError) => string;
  /** Called with the first body byte: the first-byte deadline is met. */
  onFirstByte: () => void;
  /** Longest silence of the backend between data after the first byte (stream_idle_timeout_s); 0 = none. */
  idleTimeoutMs: number;
  /** Longest the client may leave our buffer past its high-water mark (client_stall_timeout_s); 0 = none. */
  clientStallMs: number;
  /** Keep up to this many bytes of what the client got, for the call inspector; 0 = none. */
  captureBytes: number;
  /** How the upstream frames its stream: SSE events (the default) or NDJSON lines (Ollama's native API). */
  framing?: StreamFraming;
}

export type RelayResult = { summary: StreamSummary; captured?: Buffer } & (
  | { kind: 'complete' }
  /** No data event reached the client yet: the caller may try the next candidate. */
  | { kind: 'failover'; error: Omit<BackendError, 'since'> }
  | { kind: 'client_closed' }
  /** The client stopped reading for `clientStallMs`: the gateway ended the call (not the backend's fault). */
  | { kind: 'client_stalled' }
  | { kind: 'upstream_failed'; error: Omit<BackendError, 'since'> }
);

/**
 * Relays an upstream SSE stream to the client event by event, never buffering the stream:
 * each chunk's complete events are written as soon as they arrive (one write per chunk). Until
 * the first data event reaches the client a broken backend can still be failed over (the head
 * may already be out, written by the keep-alive). After that, a broken stream ends with an
 * error event and no `[DONE]`.
 */
export async function relayStream(opts: RelayOptions): Promise<RelayResult> {
  const { upstream, sse } = opts;
  const splitter = opts.framing === 'ndjson' ? new NdjsonSplitter() : new SseSplitter();
  const tap = opts.translator;
  // a bridge ends the stream in its own words, or closes what it opened (an Anthropic content
  // block) before the surface's error event
  const interrupted = (message: string) =>
    tap.failureFrames?.(message) ?? (tap.abortFrames?.() ?? '') + opts.errorEvent({ kind: 'interrupted', message });
  let sawFirstByte = false;
  const captured: Buffer[] = [];
  let capturedBytes = 0;

  const idle = new UpstreamIdleWatch(upstream.body, opts.idleTimeoutMs);

  const firstByte = () => {
    sawFirstByte = true;
    opts.onFirstByte();
    idle.start();
  };

  const relay = async (events: ReturnType<SseSplitter['push']>) => {
    const out: Buffer[] = [];
    for (const ev of events) {
      if (tap.ended) break;
      const bytes = tap.onEvent(ev);
      if (bytes) out.push(bytes);
    }
    if (!out.length) return;
    const bytes = out.length === 1 ? out[0] : joinAdjacent(out);
    if (capturedBytes < opts.captureBytes) {
      captured.push(bytes);
      capturedBytes += bytes.length;
    }
    sse.ensureHead(opts.headers);
    const pending = sse.write(bytes, opts.clientStallMs);
    if (pending) await idle.clientWait(pending);
  };
  const result = <T extends object>(r: T) =>
    Object.assign(r, { summary: tap.summary(), captured: captured.length ? Buffer.concat(captured) : undefined });

  try {
    for await (const chunk of upstream.body) {
      if (!sawFirstByte) firstByte();
      await relay(splitter.push(chunk as Buffer));
      // the backend's silence counts from here: processing and a slow client's drain were ours
      idle.refresh();
      if (sse.raw.destroyed) throw new ClientGone();
    }
    idle.stop();
    await relay(splitter.flush());
    const inBand = tap.inBandError?.();
    if (inBand !== undefined) {
      // the upstream said why in an error event of its own
      const error = { kind: 'upstream' as const, detail: inBand.detail };
      if (!sse.dataWritten) return result({ kind: 'failover' as const, error });
      if (inBand.delivered) sse.end();
      else sse.endWithEvent(interrupted(`the backend reported an error: ${inBand.detail}`));
      return result({ kind: 'upstream_failed' as const, error });
    }
    if (!tap.ended && !tap.finishedWithoutMarker()) {
      const error = { kind: 'upstream' as const, detail: 'the backend ended the stream before its end marker' };
      if (!sse.dataWritten) return result({ kind: 'failover' as const, error });
      sse.endWithEvent(interrupted(error.detail));
      return result({ kind: 'upstream_failed' as const, error });
    }
    const tail = tap.ended ? null : tap.end?.();
    if (tail) sse.endWithEvent(tail.toString('utf8'));
    else sse.end();
    return result({ kind: 'complete' as const });
  } catch (err) {
    idle.stop();
    upstream.body.destroy();
    if (err instanceof ClientStalled) {
      sse.destroy();
      return result({ kind: 'client_stalled' as const });
    }
    if (err instanceof ClientGone || sse.raw.destroyed || (sse.raw.socket?.destroyed ?? false)) {
      sse.destroy();
      return result({ kind: 'client_closed' as const });
    }
    const error = describeError(err);
    if (!sse.dataWritten) return result({ kind: 'failover' as const, error: beforeFirstEvent(error, sawFirstByte) });
    sse.endWithEvent(
      interrupted(
        error.kind === 'timeout'
          ? 'the backend stopped sending (stream idle timeout)'
          : `the backend broke the stream: ${error.detail}`,
      ),
    );
    return result({ kind: 'upstream_failed' as const, error });
  }
}

/**
 * A stream that broke before a whole event reached the client: after its first bytes a broken
 * connection is a broken answer (the backend was reached), else the error as it was.
 */
function beforeFirstEvent(error: Omit<BackendError, 'since'>, sawFirstByte: boolean): Omit<BackendError, 'since'> {
  if (!sawFirstByte || error.kind !== 'unreachable') return error;
  const detail = `stopped sending its 200 stream halfway: the connection broke (${error.detail})`;
  return { kind: 'upstream', status: 200, detail };
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
