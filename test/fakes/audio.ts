/**
 * The fakes' audio endpoints, for the kinds whose real servers have them:
 *   vllm       POST /v1/audio/transcriptions, /v1/audio/translations (Whisper models), and
 *              /v1/audio/speech (TTS models, as vLLM-Omni serves them)
 *   llamaswap  POST /v1/audio/speech, /v1/audio/transcriptions (proxied to e.g. Kokoro-FastAPI
 *              and whisper.cpp server)
 *   together   POST /v1/audio/speech, /v1/audio/transcriptions, /v1/audio/translations
 *
 * Speech answers deterministic bytes derived from input, voice and format (`speechAudio`),
 * several KB, streamed in `chunkCount` chunks paced by `tokensPerSecond`, with the format's
 * content type (audio/mpeg by default); `stream_format: "sse"` gives OpenAI's
 * `speech.audio.delta` events (base64) and a `speech.audio.done` with usage. Transcriptions
 * read a multipart form and answer `{text, usage}` JSON, text, SRT, VTT or verbose JSON per
 * `response_format` (`transcriptText`), or, when `stream=true`, `transcript.text.delta` events
 * (vLLM: `transcription.chunk` objects and `[DONE]`, as the real server sends).
 * The knobs apply as for chat: latency, prefill, errors (errorStatus/errorCount/retryAfter),
 * drops and stalls after N chunks, headThenSilence, refuse, loadingMs (llama.cpp's gate).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { badJson, kindError, type FakeReply } from './errors.ts';
import type { FakeKind, FakeKnobs, RecordedRequest } from './types.ts';

export type AudioRoute = 'speech' | 'transcriptions' | 'translations';

/** Which kinds serve which audio endpoints. */
export const AUDIO_ROUTES: Readonly<Record<FakeKind, readonly AudioRoute[]>> = {
  llamacpp: [],
  llamaswap: ['speech', 'transcriptions'],
  vllm: ['speech', 'transcriptions', 'translations'],
  ollama: [],
  openrouter: [],
  together: ['speech', 'transcriptions', 'translations'],
};

export const SPEECH_CONTENT_TYPES: Readonly<Record<string, string>> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** The fake's voice when the request names none. */
export const FAKE_DEFAULT_VOICE = 'fake-default';

export function audioRouteOf(kind: FakeKind, prefix: string, method: string, path: string): AudioRoute | undefined {
  if (method !== 'POST' || !path.startsWith(`${prefix}/audio/`)) return undefined;
  const route = path.slice(prefix.length + '/audio/'.length) as AudioRoute;
  return AUDIO_ROUTES[kind].includes(route) ? route : undefined;
}

/** Leading bytes that make each format look like itself to a curious eye. */
const MAGIC: Record<string, Buffer> = {
  mp3: Buffer.from([0x49, 0x44, 0x33, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]), // ID3v2.4
  opus: Buffer.from('OggS\0', 'latin1'),
  aac: Buffer.from([0xff, 0xf1, 0x50, 0x80]),
  flac: Buffer.from('fLaC', 'latin1'),
  wav: Buffer.from('RIFF\0\0\0\0WAVEfmt ', 'latin1'),
  pcm: Buffer.alloc(0),
};

/**
 * The audio the fakes "synthesise" for `input` in `voice` and `format`: a format's magic,
 * then pseudo-random bytes from SHA-256 in counter mode (every byte value occurs, NULs and
 * CRs included). 4 KiB plus 64 bytes per input character, at most 256 KiB.
 */
export function speechAudio(input: string, voice: string = FAKE_DEFAULT_VOICE, format = 'mp3'): Buffer {
  const size = Math.min(4096 + 64 * input.length, 256 * 1024);
  const out = Buffer.alloc(size);
  const magic = MAGIC[format] ?? Buffer.alloc(0);
  magic.copy(out, 0);
  const seed = `${format}\0${voice}\0${input}`;
  for (let at = magic.length, block = 0; at < size; block++) {
    const digest = createHash('sha256').update(seed).update(String(block)).digest();
    at += digest.copy(out, at);
  }
  return out;
}

/** The transcript the fakes "hear" in `audio`: words derived from its bytes. */
export function transcriptText(
  audio: Buffer,
  route: 'transcriptions' | 'translations' = 'transcriptions',
  language = 'en',
): string {
  const hash = createHash('sha256').update(audio).digest('hex');
  const words = ['the', 'quick', 'brown', 'fox', 'jumps', 'over', 'a', 'lazy', 'dog', 'and', 'sings'];
  const picked = Array.from({ length: 8 }, (_, i) => words[parseInt(hash.slice(i * 2, i * 2 + 2), 16) % words.length]);
  const lead = route === 'translations' ? 'Translated' : `Heard (${language})`;
  return `${lead}: ${picked.join(' ')}, ${audio.length} bytes, ${hash.slice(0, 8)}.`;
}

/** What the audio handlers need of their fake. */
export interface AudioContext {
  kind: FakeKind;
  knobs: FakeKnobs;
  /** Auth and loading: the answer a request gets before anything else, if any. */
  gate(req: IncomingMessage): FakeReply | undefined;
  /** The error a generation request gets for `model` (unknown model, the error knobs), if any. */
  refusal(model: string): FakeReply | undefined;
  send(res: ServerResponse, reply: FakeReply): void;
  /** Records what the answer was for (servedOrder). */
  served(label: string): void;
}

export async function serveAudio(
  ctx: AudioContext,
  route: AudioRoute,
  req: IncomingMessage,
  res: ServerResponse,
  record: RecordedRequest,
  signal: AbortSignal,
): Promise<void> {
  let raw: Buffer;
  try {
    raw = await readBytes(req);
  } catch {
    return;
  }
  const gated = ctx.gate(req);
  if (route === 'speech') {
    let body: any;
    try {
      body = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
    } catch {
      body = raw.toString('utf8');
    }
    record.body = body;
    if (gated) return ctx.send(res, gated);
    if (typeof body !== 'object' || body === null) return ctx.send(res, badJson(ctx.kind));
    return serveSpeech(ctx, body, res, signal);
  }
  let form: FormData;
  try {
    form = await new Response(raw, {
      headers: { 'content-type': String(req.headers['content-type'] ?? '') },
    }).formData();
  } catch (err) {
    record.body = raw.toString('latin1');
    return ctx.send(res, gated ?? kindError(ctx.kind, 400, `invalid multipart body: ${String(err)}`));
  }
  record.body = await recordForm(form);
  if (gated) return ctx.send(res, gated);
  return serveTranscription(ctx, route, form, res, signal);
}

async function serveSpeech(ctx: AudioContext, body: any, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const { knobs } = ctx;
  await sleep(knobs.latencyMs, signal);
  if (signal.aborted) return;
  const model = String(body.model ?? '');
  const refusal = ctx.refusal(model);
  if (typeof body.input !== 'string')
    return ctx.send(res, refusal ?? kindError(ctx.kind, 400, 'input: Field required'));
  if (refusal) return ctx.send(res, refusal);
  const format = typeof body.response_format === 'string' ? body.response_format : 'mp3';
  const contentType = SPEECH_CONTENT_TYPES[format];
  if (!contentType) return ctx.send(res, kindError(ctx.kind, 400, `unsupported response_format ${format}`));
  const voice = typeof body.voice === 'string' && body.voice !== '' ? body.voice : FAKE_DEFAULT_VOICE;
  const audio = speechAudio(body.input, voice, format);
  ctx.served(body.input);
  const sse = body.stream_format === 'sse';
  if (knobs.headThenSilence) {
    res.writeHead(200, { 'Content-Type': sse ? 'text/event-stream' : contentType });
    res.flushHeaders();
    return untilAborted(signal);
  }
  const chunks = split(audio, Math.max(1, knobs.chunkCount));
  if (sse) {
    const frames = chunks.map(
      (c) => `data: ${JSON.stringify({ type: 'speech.audio.delta', audio: c.toString('base64') })}\n\n`,
    );
    const inputTokens = Math.max(1, Math.round(body.input.length / 4));
    const usage = {
      input_tokens: inputTokens,
      output_tokens: chunks.length,
      total_tokens: inputTokens + chunks.length,
    };
    const done = `data: ${JSON.stringify({ type: 'speech.audio.done', usage })}\n\n`;
    return paced(
      ctx,
      res,
      { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' },
      frames.map((f) => Buffer.from(f)),
      Buffer.from(done),
      signal,
    );
  }
  const head: Record<string, string> = { 'Content-Type': contentType };
  if (knobs.audioContentLength) head['Content-Length'] = String(audio.length);
  return paced(ctx, res, head, chunks, undefined, signal);
}

async function serveTranscription(
  ctx: AudioContext,
  route: 'transcriptions' | 'translations',
  form: FormData,
  res: ServerResponse,
  signal: AbortSignal,
): Promise<void> {
  const { knobs } = ctx;
  await sleep(knobs.latencyMs, signal);
  if (signal.aborted) return;
  const file = form.get('file');
  const model = String(form.get('model') ?? '');
  const refusal = ctx.refusal(model);
  if (refusal) return ctx.send(res, refusal);
  if (!(file instanceof Blob)) return ctx.send(res, kindError(ctx.kind, 400, 'file: Field required'));
  const audio = Buffer.from(await file.arrayBuffer());
  const language = String(form.get('language') ?? 'en');
  const text = transcriptText(audio, route, language);
  ctx.served((file as File).name ?? '');
  const format = String(form.get('response_format') ?? 'json');
  const words = text.split(' ');
  const usage = {
    type: 'tokens',
    input_tokens: Math.ceil(audio.length / 1000),
    output_tokens: words.length,
    total_tokens: Math.ceil(audio.length / 1000) + words.length,
  };

  if (knobs.headThenSilence) {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.flushHeaders();
    return untilAborted(signal);
  }
  if (form.get('stream') === 'true') {
    const sseHead = { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' };
    if (ctx.kind === 'vllm') {
      // vLLM streams chat-style `transcription.chunk` objects and ends with [DONE]
      const created = Math.floor(Date.now() / 1000);
      const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
        Buffer.from(
          `data: ${JSON.stringify({ id: `trsc-${created}`, object: 'transcription.chunk', created, model, choices: [{ delta, ...extra }] })}\n\n`,
        );
      const frames = words.map((w, i) => chunk({ content: i ? ` ${w}` : w }));
      return paced(
        ctx,
        res,
        sseHead,
        [...frames, chunk({}, { finish_reason: 'stop', stop_reason: null })],
        Buffer.from('data: [DONE]\n\n'),
        signal,
      );
    }
    const frames = words.map((w, i) =>
      Buffer.from(`data: ${JSON.stringify({ type: 'transcript.text.delta', delta: i ? ` ${w}` : w })}\n\n`),
    );
    const done = Buffer.from(`data: ${JSON.stringify({ type: 'transcript.text.done', text, usage })}\n\n`);
    return paced(ctx, res, sseHead, frames, done, signal);
  }
  if (knobs.dropAfterChunks >= 0) {
    res.socket?.destroy();
    return;
  }
  if (knobs.stallAfterChunks >= 0) return untilAborted(signal);
  if (knobs.tokensPerSecond > 0) await sleep((knobs.chunkCount * 1000) / knobs.tokensPerSecond, signal);
  if (signal.aborted) return;
  const duration = Math.round(audio.length / 320) / 100;
  switch (format) {
    case 'text':
      return ctx.send(res, { status: 200, body: `${text}\n` });
    case 'srt':
      return ctx.send(res, {
        status: 200,
        body: `1\n00:00:00,000 --> 00:00:${String(Math.min(59, Math.ceil(duration))).padStart(2, '0')},000\n${text}\n\n`,
      });
    case 'vtt':
      return ctx.send(res, {
        status: 200,
        body: `WEBVTT\n\n00:00:00.000 --> 00:00:${String(Math.min(59, Math.ceil(duration))).padStart(2, '0')}.000\n${text}\n\n`,
      });
    case 'verbose_json':
      return ctx.send(res, {
        status: 200,
        body: {
          task: route === 'translations' ? 'translate' : 'transcribe',
          language,
          duration,
          text,
          segments: [{ id: 0, start: 0, end: duration, text }],
          usage,
        },
      });
    case 'json':
      return ctx.send(res, { status: 200, body: { text, usage } });
    default:
      return ctx.send(res, kindError(ctx.kind, 400, `unsupported response_format ${format}`));
  }
}

/** Writes `chunks` paced like a token stream, obeying prefill, drop and stall; `tail` after the last. */
async function paced(
  ctx: AudioContext,
  res: ServerResponse,
  head: Record<string, string>,
  chunks: Buffer[],
  tail: Buffer | undefined,
  signal: AbortSignal,
): Promise<void> {
  const { tokensPerSecond, dropAfterChunks: drop, stallAfterChunks: stall, prefillMs } = ctx.knobs;
  res.writeHead(200, head);
  res.flushHeaders();
  if (prefillMs > 0) await sleep(prefillMs, signal);
  const cut = async (sent: number): Promise<boolean> => {
    if (drop >= 0 && sent >= Math.min(drop, chunks.length)) {
      res.socket?.destroy();
      return true;
    }
    if (stall >= 0 && sent >= Math.min(stall, chunks.length)) {
      await untilAborted(signal);
      return true;
    }
    return false;
  };
  for (let i = 0; i < chunks.length; i++) {
    if (await cut(i)) return;
    if (tokensPerSecond > 0) await sleep(1000 / tokensPerSecond, signal);
    if (signal.aborted) return;
    await write(res, chunks[i], signal);
  }
  if (await cut(chunks.length)) return;
  if (tail) await write(res, tail, signal);
  res.end();
}

/** What RecordedRequest.body holds for a form: its fields (first value; `x[]` as lists), the part order, and the file. */
async function recordForm(form: FormData): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = { parts: [...form.keys()] };
  for (const [name, value] of form.entries()) {
    if (typeof value !== 'string') {
      if (!out.file)
        out.file = {
          filename: value.name,
          type: value.type,
          size: value.size,
          data: Buffer.from(await value.arrayBuffer()),
        };
      continue;
    }
    if (name.endsWith('[]')) out[name] = [...((out[name] as string[] | undefined) ?? []), value];
    else if (!(name in out)) out[name] = value;
  }
  return out;
}

function split(bytes: Buffer, count: number): Buffer[] {
  const size = Math.ceil(bytes.length / count);
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

async function readBytes(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** Writes and waits until the data is handed to the socket (or the response is gone). */
function write(res: ServerResponse, data: Buffer, signal: AbortSignal): Promise<void> {
  if (res.destroyed || res.writableEnded || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    res.write(data, () => done());
  });
}
