/**
 * An Ollama call on an OpenAI-compatible backend: the pure bridge's chat-completions (or
 * embeddings) request, made once per call and kept for failover; the answer made back into
 * Ollama's object with statistics from what the gateway measured; a stream translated chunk by
 * chunk into NDJSON lines; the backend's errors in Ollama's shape.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { credentialHeaders } from '../backends/credentials.ts';
import type { BackendSpec } from '../config/types.ts';
import { badRequest } from '../errors.ts';
import { ollamaErrorFromUpstream } from '../bridges/ollama/errors.ts';
import { ollamaMetrics } from '../bridges/ollama/metrics.ts';
import { ollamaToEmbeddings } from '../bridges/ollama/request-embed.ts';
import { ollamaToChat } from '../bridges/ollama/request.ts';
import { chatToOllama, embeddingToOllama, embedToOllama } from '../bridges/ollama/response.ts';
import { ChatToOllamaStream } from '../bridges/ollama/stream.ts';
import type { Json, OllamaProblem } from '../bridges/ollama/types.ts';
import { upstreamRequestHeaders } from '../upstream/headers.ts';
import type { AttemptSurface, StreamTranslator, SurfaceAnswer, UpstreamRequest } from '../upstream/surface.ts';
import { llamaCppTimings, usageFromLlamaCppTimings } from '../wire/llama-timings.ts';
import { usageFromOpenAI } from '../wire/usage.ts';
import { NO_TRANSFORM, transformText, type BodyTransform } from './body-transform.ts';
import { estimatePromptTokens } from '../wire/prompt-tokens.ts';
import type { OllamaCall } from './ollama-call.ts';

export class TranslatedOllama implements AttemptSurface {
  /** Set when the request cannot be translated (the route answers 400, or keeps only ollama backends). */
  readonly problem?: OllamaProblem;
  private readonly upstream?: Json;
  private readonly path: string;
  private readonly transform: BodyTransform;
  private backend?: BackendSpec;
  private credential: Record<string, string> = {};
  /** When the current attempt was sent, for the statistics. */
  private sentAt: number;
  private stream?: ChatToOllamaStream;

  constructor(
    private readonly call: OllamaCall,
    streaming: boolean,
  ) {
    this.sentAt = call.startedAt;
    const { endpoint, body, requested } = call;
    const embeds = endpoint === 'embed' || endpoint === 'embeddings';
    this.path = embeds ? '/v1/embeddings' : '/v1/chat/completions';
    const made = embeds
      ? ollamaToEmbeddings(endpoint, body, requested)
      : ollamaToChat(endpoint, body, { model: requested, stream: streaming });
    let transform = NO_TRANSFORM;
    if (!made.ok) this.problem = made.error;
    else if ('chat' in made) {
      this.upstream = made.chat;
      transform = call.transformFor?.(made.want) ?? NO_TRANSFORM;
    } else this.upstream = made.body;
    this.transform = transform;
  }

  /** This call's attempt on `backend` (failover may change the backend). */
  on(backend: BackendSpec): this {
    this.backend = backend;
    this.credential = credentialHeaders(backend);
    return this;
  }

  upstreamRequest(model: string): UpstreamRequest {
    const body = this.upstream;
    if (!body) throw badRequest(this.problem!.message, this.problem!.param);
    this.sentAt = this.call.now();
    body.model = model;
    const done = transformText(JSON.stringify(body), body, this.transform, this.backend!, model);
    return { path: this.path, body: done.text, reasoning: done.reasoning };
  }

  upstreamHeaders(client: IncomingHttpHeaders, contentLength: number): Record<string, string | string[]> {
    return upstreamRequestHeaders(client, this.credential, contentLength);
  }

  answer(_raw: Buffer, parsed: Record<string, unknown>): SurfaceAnswer {
    const usage = usageFromOpenAI(parsed) ?? usageFromLlamaCppTimings(parsed.timings);
    const times = { startedAt: this.call.startedAt, sentAt: this.sentAt, endedAt: this.call.now() };
    const ctx = {
      model: this.call.requested,
      createdAt: new Date(times.endedAt).toISOString(),
      metrics: ollamaMetrics(times, usage, llamaCppTimings(parsed.timings)),
    };
    const { endpoint } = this.call;
    if (endpoint === 'embed') return { body: JSON.stringify(embedToOllama(parsed, ctx)), usage };
    if (endpoint === 'embeddings') return { body: JSON.stringify(embeddingToOllama(parsed)), usage };
    const made = chatToOllama(endpoint, parsed, ctx);
    if (made.ok) return { body: JSON.stringify(made.answer), usage };
    return { status: 502, body: JSON.stringify({ error: made.message }), usage };
  }

  streamTranslator(now: () => number): StreamTranslator {
    const { endpoint } = this.call;
    this.stream = new ChatToOllamaStream({
      kind: endpoint === 'generate' ? 'generate' : 'chat',
      model: this.call.requested,
      now,
      promptTokenEstimate: estimatePromptTokens(this.call.body),
      startedAt: this.call.startedAt,
      sentAt: this.sentAt,
    });
    return this.stream;
  }

  /** The backend's own words when its stream reported an error, for the stream's last line. */
  streamFailure(): string | undefined {
    return this.stream?.upstreamError;
  }

  upstreamErrorBody(status: number, text: string): string {
    return JSON.stringify(ollamaErrorFromUpstream(status, text));
  }
}
