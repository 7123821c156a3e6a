/**
 * The seam between the proxy's core and one kind of call.
 *
 * The core (proxy.ts) knows leases, attempts, deadlines, failover and where bytes go; it never
 * asks which endpoint a call came from. A surface knows the call's wire format: the request a
 * backend gets, the answer the client gets, how a stream is translated event by event, and
 * how an error looks to this client. The OpenAI surfaces pass bytes through
 * (openai-surface.ts); a bridge (Anthropic, Responses) is one more surface that translates.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { BackendSpec } from '../config/types.ts';
import type { GatewayError } from '../errors.ts';
import type { StreamTranslator } from '../wire/stream-translator.ts';
import type { Usage } from '../wire/usage.ts';

/** The upstream request of one attempt. */
export interface UpstreamRequest {
  /** Below the backend's base URL, query string included. */
  path: string;
  /** A JSON text, or bytes (a multipart form with an audio file). */
  body: string | Buffer;
  /** The reasoning switch as applied on this backend (`x-reasoning-control` and the call log). */
  reasoning?: string;
}

export type { StreamTranslator } from '../wire/stream-translator.ts';

/** A 200 JSON answer as the client gets it. */
export interface SurfaceAnswer {
  body: Buffer | string;
  usage?: Usage;
  /** Not 200: the backend's answer could not be made into this client's (e.g. unparsable tool arguments). */
  status?: number;
}

/** How one attempt on one backend looks on the wire. */
export interface AttemptSurface {
  /**
   * The request for `model` (the backend's own id), whose context window is `contextLength` tokens
   * when the backend said.
   */
  upstreamRequest(model: string, contextLength?: number): UpstreamRequest;
  /** The request headers: the client's that may pass, plus the backend's credential. */
  upstreamHeaders(client: IncomingHttpHeaders, contentLength: number): Record<string, string | string[]>;
  /** A 200 JSON answer: the bytes the client gets and the usage for the call log. */
  answer(raw: Buffer, parsed: Record<string, unknown>): SurfaceAnswer;
  /** A fresh translator for one streamed attempt. */
  streamTranslator(now: () => number): StreamTranslator;
  /** A backend's error answer as this client's body (status and retry-after pass as they were). */
  upstreamErrorBody(status: number, text: string): string;
  /** How the backend frames a streamed answer: SSE events (absent), or one JSON object a line (Ollama's native API). */
  readonly upstreamFraming?: StreamFraming;
}

/** The framing of a streamed body: Server-Sent Events, or newline-delimited JSON. */
export type StreamFraming = 'sse' | 'ndjson';

export interface CallSurface {
  /** What the call log and the metrics call this kind of call. */
  readonly endpoint: string;
  /** The client asked for a stream. */
  readonly stream: boolean;
  /** The body as the client sent it, for body capture. */
  readonly rawBody: string;
  /**
   * A 200 answer that is neither JSON nor an event stream goes to the client as bytes, piped (speech
   * audio, a text transcript).
   */
  readonly raw?: boolean;
  /** The wire format of an attempt on `backend` (a bridge passes through or translates per kind). */
  attempt(backend: BackendSpec): AttemptSurface;
  /** The last event of a stream that broke, or was refused after its head went out. */
  errorEvent(error: StreamError): string;
  /** What keeps a waiting stream open (an SSE comment, Anthropic's ping), saying `status`. */
  keepaliveFrame(status: string): string;
  /** The client's stream content type, when it is not SSE (Ollama's `application/x-ndjson`). */
  readonly streamContentType?: string;
  /** A whole JSON answer as the last frame of a stream whose head is out already; absent: an SSE `data:` event. */
  jsonStreamFrame?(json: string): string;
}

/** Why a stream ends early: the backend broke it, answered with an error, or the gateway refused. */
export type StreamError =
  | { kind: 'interrupted'; message: string }
  | { kind: 'upstream'; status: number; text: string }
  | { kind: 'refused'; error: GatewayError };
