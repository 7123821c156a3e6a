/**
 * The audio surfaces: `POST /v1/audio/speech` (JSON in, audio bytes out) and
 * `POST /v1/audio/transcriptions` / `translations` (a multipart form with an audio file in,
 * JSON or text out), passed through to OpenAI-compatible backends.
 *
 * Speech: the client's JSON goes up byte for byte but for `model` (the backend's id) and
 * `voice` (the alias's default, only when the client sent none). The answer is piped as bytes
 * (`raw`: raw-relay.ts), or relayed event by event when the client asked for
 * `stream_format: "sse"`. Transcriptions: the form is rebuilt as multipart with every field
 * as sent, in its order, `model` set to the backend's id; the answer passes through (JSON, or
 * text per `response_format`, piped like audio).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { credentialHeaders } from '../backends/credentials.ts';
import type { BackendSpec } from '../config/types.ts';
import { editTopLevel } from '../wire/raw-json.ts';
import { upstreamRequestHeaders } from '../upstream/headers.ts';
import { openAIErrorEvent } from './openai-surface.ts';
import type { SseEvent } from '../wire/sse.ts';
import type {
  AttemptSurface,
  CallSurface,
  StreamError,
  StreamTranslator,
  SurfaceAnswer,
  UpstreamRequest,
} from '../upstream/surface.ts';
import { estimateTokens } from '../wire/token-estimate.ts';
import { usageFromOpenAI, type Usage } from '../wire/usage.ts';

export type AudioEndpoint = 'speech' | 'transcriptions' | 'translations';

/** What every audio surface shares: one wire format for every attempt, the backend's credential. */
abstract class AudioSurfaceBase implements CallSurface, AttemptSurface {
  abstract readonly endpoint: AudioEndpoint;
  abstract readonly stream: boolean;
  abstract readonly rawBody: string;
  protected backend?: BackendSpec;

  get raw(): boolean {
    // a stream's head may be out already (keep-alive): then only events can follow
    return !this.stream;
  }

  attempt(backend: BackendSpec): AttemptSurface {
    this.backend = backend;
    return this;
  }

  upstreamHeaders(client: IncomingHttpHeaders, contentLength: number): Record<string, string | string[]> {
    return upstreamRequestHeaders(client, this.backend ? credentialHeaders(this.backend) : {}, contentLength);
  }

  abstract upstreamRequest(model: string): UpstreamRequest;

  answer(raw: Buffer, parsed: Record<string, unknown>): SurfaceAnswer {
    return { body: raw, usage: usageFromOpenAI(parsed) };
  }

  streamTranslator(now: () => number): StreamTranslator {
    return createAudioStreamTap(now, this.promptTokenEstimate());
  }

  protected promptTokenEstimate(): number {
    return 0;
  }

  upstreamErrorBody(_status: number, text: string): string {
    return text;
  }

  errorEvent(error: StreamError): string {
    return openAIErrorEvent(error);
  }

  keepaliveFrame(status: string): string {
    return `: ${status}\n\n`;
  }
}

// ------------------------------------------------------------------------------------ speech

export interface SpeechCall {
  /** The route's own path, forwarded as is. */
  path: string;
  /** The client's query string with its `?`, or ''. */
  query: string;
  body: Record<string, unknown>;
  /** The body exactly as the client sent it. */
  rawBody: string;
  /** `alias_defaults[alias].voice`: sent when the client gave no voice. */
  defaultVoice?: string;
}

export class SpeechSurface extends AudioSurfaceBase {
  readonly endpoint = 'speech' as const;
  readonly stream: boolean;
  readonly rawBody: string;

  constructor(private readonly call: SpeechCall) {
    super();
    this.stream = call.body.stream_format === 'sse';
    this.rawBody = call.rawBody;
  }

  upstreamRequest(model: string): UpstreamRequest {
    return { path: this.call.path + this.call.query, body: speechBody(this.call, model) };
  }

  protected override promptTokenEstimate(): number {
    return typeof this.call.body.input === 'string' ? estimateTokens(this.call.body.input) : 0;
  }
}

/** The client's speech body with the backend's model id and, when it sent none, the default voice. */
export function speechBody(call: SpeechCall, model: string): string {
  const edits = new Map<string, string>();
  if (call.body.model !== model) edits.set('model', JSON.stringify(model));
  if (call.defaultVoice !== undefined && !hasVoice(call.body.voice))
    edits.set('voice', JSON.stringify(call.defaultVoice));
  return edits.size ? editTopLevel(call.rawBody, edits) : call.rawBody;
}

function hasVoice(voice: unknown): boolean {
  return voice !== undefined && voice !== null && voice !== '';
}

// ---------------------------------------------------------------------------- transcriptions

/** One part of a multipart form, in the order the client sent it. */
export interface FormPart {
  name: string;
  /** A field's value (text). */
  value?: string;
  /** A field's content type when it was not plain text (a JSON field). */
  contentType?: string;
  file?: { filename: string; contentType: string; data: Buffer };
}

export interface TranscriptionCall {
  endpoint: 'transcriptions' | 'translations';
  path: string;
  query: string;
  parts: readonly FormPart[];
  /** The fields by name (first value; `name[]` fields as lists), for what the gateway reads. */
  fields: Record<string, unknown>;
}

export class TranscriptionSurface extends AudioSurfaceBase {
  readonly endpoint: 'transcriptions' | 'translations';
  readonly stream: boolean;
  readonly rawBody: string;
  private readonly boundary: string;
  /** The last form built, by model id (attempts on the same id share it: the file is not copied again). */
  private built?: { model: string; body: Buffer };

  constructor(private readonly call: TranscriptionCall) {
    super();
    this.endpoint = call.endpoint;
    this.stream = call.fields.stream === 'true';
    this.rawBody = formSummary(call.parts);
    this.boundary = freshBoundary(call.parts);
  }

  upstreamRequest(model: string): UpstreamRequest {
    if (this.built?.model !== model) this.built = { model, body: multipartBody(this.call.parts, this.boundary, model) };
    return { path: this.call.path + this.call.query, body: this.built.body };
  }

  override upstreamHeaders(client: IncomingHttpHeaders, contentLength: number): Record<string, string | string[]> {
    const headers = super.upstreamHeaders(client, contentLength);
    headers['content-type'] = `multipart/form-data; boundary=${this.boundary}`;
    return headers;
  }
}

/** A boundary that occurs in no part (random: a clash is only ever theoretical, but checked). */
function freshBoundary(parts: readonly FormPart[]): string {
  for (;;) {
    const boundary = `----llm-gateway-${randomBytes(16).toString('hex')}`;
    if (!parts.some((p) => p.file?.data.includes(boundary) || p.value?.includes(boundary))) return boundary;
  }
}

/** The form as multipart/form-data: every part as sent, in its order, `model` set to `model`. */
export function multipartBody(parts: readonly FormPart[], boundary: string, model: string): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(part.name)}"`;
    if (part.file) {
      head +=
        `; filename="${escapeName(part.file.filename)}"\r\nContent-Type: ` +
        `${part.file.contentType || 'application/octet-stream'}\r\n\r\n`;
      chunks.push(Buffer.from(head, 'utf8'), part.file.data, CRLF);
      continue;
    }
    if (part.contentType) head += `\r\nContent-Type: ${part.contentType}`;
    const value = part.name === 'model' ? model : (part.value ?? '');
    chunks.push(Buffer.from(`${head}\r\n\r\n${value}\r\n`, 'utf8'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`, 'utf8'));
  return Buffer.concat(chunks);
}

const CRLF = Buffer.from('\r\n');

/** A name or filename in a Content-Disposition header, escaped as browsers do (WHATWG). */
function escapeName(name: string): string {
  return name.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
}

/** What the call inspector keeps of a form: its fields, and of the file only its name, type and size. */
function formSummary(parts: readonly FormPart[]): string {
  return JSON.stringify(
    parts.map((p) =>
      p.file
        ? { name: p.name, filename: p.file.filename, content_type: p.file.contentType, bytes: p.file.data.length }
        : { name: p.name, value: p.value },
    ),
  );
}

// ------------------------------------------------------------------------------- stream tap

/**
 * The relay's view of an audio event stream, passed through byte for byte: OpenAI's speech
 * (`speech.audio.delta` … `speech.audio.done` with usage) and transcription streams
 * (`transcript.text.delta` … `transcript.text.done`), and vLLM's chunks ending in `[DONE]`.
 * A stream that stopped cleanly after some data without an end marker counts as finished.
 */
export function createAudioStreamTap(now: () => number, promptTokenEstimate: number): StreamTranslator {
  let ended = false;
  let dataEvents = 0;
  let firstAt: number | undefined;
  let usage: Usage | undefined;
  let error: string | undefined;
  return {
    onEvent(ev: SseEvent): Buffer | null {
      if (ev.data === '[DONE]') {
        ended = true;
        return ev.raw;
      }
      if (ev.data === '') return ev.raw;
      dataEvents++;
      firstAt ??= now();
      // deltas are mostly base64 audio: parse only events that may say something
      const data = ev.data;
      if (
        data.includes('"usage"') ||
        data.includes('.done"') ||
        data.includes('"error"') ||
        ev.event?.endsWith('.done')
      ) {
        const parsed = parseObject(data);
        if (parsed) {
          usage = usageFromOpenAI(parsed) ?? usage;
          const type = typeof parsed.type === 'string' ? parsed.type : ev.event;
          if (type === 'speech.audio.done' || type === 'transcript.text.done') ended = true;
          if (parsed.error !== undefined && parsed.error !== null) error = errorDetail(parsed.error);
        }
      }
      return ev.raw;
    },
    get ended() {
      return ended;
    },
    finishedWithoutMarker: () => dataEvents > 0 && error === undefined,
    inBandError: () => (error === undefined ? undefined : { detail: error, delivered: true }),
    summary: () => ({
      usage: usage ?? { prompt_tokens: promptTokenEstimate, completion_tokens: 0, total_tokens: promptTokenEstimate },
      usageSource: usage ? 'reported' : 'estimated',
      firstTokenAt: firstAt,
      outputTokens: usage?.completion_tokens ?? 0,
      contentChunks: dataEvents,
      sawDone: ended,
      usageSynthesised: false,
    }),
  };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function errorDetail(error: unknown): string {
  if (typeof error === 'string') return error;
  const message = (error as { message?: unknown }).message;
  return typeof message === 'string' ? message : JSON.stringify(error).slice(0, 500);
}
