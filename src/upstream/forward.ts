import type { Dispatcher } from 'undici';
import { describeError, errorCode } from '../backends/errors.ts';
import type { BackendError } from '../backends/types.ts';
import type { AbortSignalLike } from '../scheduler/index.ts';
import { UpstreamIdleWatch } from './idle-watch.ts';

export type UpstreamHeaders = Record<string, string | string[] | undefined>;

export interface ForwardRequest {
  dispatcher: Dispatcher;
  path: string;
  headers: Record<string, string | string[]>;
  body: string | Buffer;
  /** Aborts the request: the client left, or the attempt's deadline passed. */
  signal: AbortSignalLike;
  /** The client asked for a stream: a 200 event stream is handed back unread. */
  stream: boolean;
  /** The call takes bytes (audio, text): a 200 that is neither JSON nor an event stream is handed back unread. */
  raw?: boolean;
  /**
   * A body read here (a JSON answer, an error's text): called with its first byte, so the
   * caller's deadline for the first byte (`signal`) can be lifted.
   */
  onFirstByte?: () => void;
  /** A body read here: the longest silence between its bytes after the first (stream_idle_timeout_s); 0 = none. */
  bodyIdleMs?: number;
}

/** What one HTTP exchange with a backend came to, before anyone decides what it means. */
export type Forwarded =
  /** A 200 JSON answer, read whole and parsed. */
  | { kind: 'ok-json'; headers: UpstreamHeaders; raw: Buffer; json: Record<string, unknown> }
  /** A 200 event stream, body not read yet (the relay reads it). */
  | { kind: 'ok-stream'; response: Dispatcher.ResponseData }
  /** With `raw`: a 200 that is neither JSON nor an event stream (audio bytes, a text transcript), body not read yet. */
  | { kind: 'ok-raw'; response: Dispatcher.ResponseData }
  /** Any other status, with its body as text. */
  | { kind: 'upstream-status'; status: number; headers: UpstreamHeaders; text: string }
  /** A 200 whose body is not a JSON object, or any body that stopped halfway: the backend is broken, not the client. */
  | { kind: 'bad-answer'; error: Omit<BackendError, 'since'> }
  /** No answer: connection refused or reset, a deadline passed, the client left. */
  | { kind: 'transport-error'; error: Omit<BackendError, 'since'> };

/**
 * Sends one request to one backend and turns the undici response into a typed result. Throws
 * only the gateway's own errors (an exception in a callback while the body is read): every
 * failure of the backend or the network is a `transport-error`, or a `bad-answer` for a body
 * that stopped halfway. Deadlines come in through `signal` (the gateway's own timers: until the first body
 * byte) and `bodyIdleMs` (after it), so undici's head/body timeouts stay off.
 */
export async function forward(req: ForwardRequest): Promise<Forwarded> {
  let res: Dispatcher.ResponseData;
  try {
    res = await req.dispatcher.request({
      path: req.path,
      method: 'POST',
      headers: req.headers,
      body: req.body,
      // undici takes any object with abort listeners (it checks for addEventListener)
      signal: req.signal as AbortSignal,
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  } catch (err) {
    return { kind: 'transport-error', error: describeError(err) };
  }
  const status = res.statusCode;
  const contentType = String(res.headers['content-type'] ?? '');
  // Ollama's native API streams newline-delimited JSON; the relay reads it line by line
  const eventStream = contentType.includes('text/event-stream') || contentType.includes('application/x-ndjson');
  if (status === 200 && req.stream && eventStream) return { kind: 'ok-stream', response: res };
  const bytes = !contentType.includes('json') && !eventStream;
  if (status === 200 && req.raw && bytes) return { kind: 'ok-raw', response: res };
  const idle = new UpstreamIdleWatch(res.body, req.bodyIdleMs ?? 0);
  const read = { started: false };
  let raw: Buffer;
  try {
    raw = await readWhole(res.body, idle, read, req.onFirstByte);
  } catch (err) {
    res.body.destroy();
    // an error without a code did not come from the socket or undici: the gateway's own bug,
    // thrown for the proxy (it releases the slot, the route answers 500, the backend is not blamed)
    if (!idle.expired && !req.signal.aborted && errorCode(err) === undefined) throw err;
    const failure = describeError(err);
    // before the first byte, or our own abort (the client left, a deadline): no answer
    if (!idle.expired && (!read.started || req.signal.aborted || failure.kind !== 'unreachable')) {
      return { kind: 'transport-error', error: failure };
    }
    // the backend answered, then stopped or broke the connection: a broken answer, whatever its status said
    const why = idle.expired
      ? `no data for ${(req.bodyIdleMs ?? 0) / 1000} s after its first bytes (stream_idle_timeout_s)`
      : `the connection broke (${failure.detail})`;
    const detail = `stopped sending its ${status} answer halfway: ${why}`;
    return { kind: 'bad-answer', error: { kind: 'upstream', status, detail } };
  }
  if (status !== 200) return { kind: 'upstream-status', status, headers: res.headers, text: raw.toString('utf8') };
  const json = parseObject(raw);
  if (!json) {
    const preview = raw.subarray(0, 120).toString('utf8').replace(/\s+/g, ' ');
    const type = contentType || 'no content type';
    const detail = `answered 200 with a body that is not a JSON object (${type}): ${preview}`;
    return { kind: 'bad-answer', error: { kind: 'upstream', status: 200, detail } };
  }
  return { kind: 'ok-json', headers: res.headers, raw, json };
}

/**
 * A body read whole: `read.started` and `onFirstByte` with its first chunk, then `idle` watches
 * the silence between chunks.
 */
async function readWhole(
  body: AsyncIterable<unknown>,
  idle: UpstreamIdleWatch,
  read: { started: boolean },
  onFirstByte?: () => void,
): Promise<Buffer> {
  const parts: Buffer[] = [];
  try {
    for await (const chunk of body) {
      if (parts.length === 0) {
        read.started = true;
        onFirstByte?.();
        idle.start();
      }
      parts.push(chunk as Buffer);
      idle.refresh();
    }
  } finally {
    idle.stop();
  }
  return parts.length === 1 ? parts[0] : Buffer.concat(parts);
}

function parseObject(raw: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(raw.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
