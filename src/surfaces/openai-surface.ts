/**
 * The OpenAI surfaces: chat completions, legacy completions and embeddings, passed through to
 * OpenAI-compatible backends. The client's bytes go up with only the gateway's fields edited
 * in (call-bytes.ts); the answer comes back as the backend's bytes, streams event by event
 * through the usage tap; embeddings are re-encoded to what the client asked for.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { credentialHeaders } from '../backends/credentials.ts';
import type { BackendSpec } from '../config/types.ts';
import { adaptEmbeddingsResponse, type EmbeddingEncoding } from '../backends/embeddings-encoding.ts';
import { usageFromLlamaCppTimings } from '../wire/llama-timings.ts';
import { asErrorEvent, upstreamBody } from './call-bytes.ts';
import { estimatePromptTokens } from '../wire/prompt-tokens.ts';
import { formatSseData } from '../wire/sse.ts';
import { createUsageTap } from '../wire/stream-usage.ts';
import { NO_TRANSFORM, type BodyTransform } from './body-transform.ts';
import { upstreamRequestHeaders } from '../upstream/headers.ts';
import { ThinkTagsTap } from './think-tags-tap.ts';
import { ThinkTagsRelabel } from '../bridges/reasoning/think-tags.ts';
import type {
  AttemptSurface,
  CallSurface,
  StreamError,
  StreamTranslator,
  SurfaceAnswer,
  UpstreamRequest,
} from '../upstream/surface.ts';
import { usageFromOpenAI, type Usage } from '../wire/usage.ts';

export type OpenAIEndpoint = 'chat' | 'completions' | 'embeddings';

export interface OpenAICall {
  endpoint: OpenAIEndpoint;
  /** The route's own path, forwarded as is (never the client's `/v1//x/` spelling). */
  path: string;
  /** The client's query string with its `?`, or ''. */
  query: string;
  /** The parsed body, for the fields the gateway reads. */
  body: Record<string, unknown>;
  /** The body exactly as the client sent it. */
  rawBody: string;
  /** The reasoning switch and sampling defaults, per serving backend (chat and completions). */
  transform?: BodyTransform;
}

/**
 * One OpenAI call's surface; every attempt looks the same, so it is its own attempt surface
 * (a class: nothing is allocated per call beyond the object itself).
 */
export class OpenAISurface implements CallSurface, AttemptSurface {
  readonly endpoint: OpenAIEndpoint;
  readonly stream: boolean;
  readonly rawBody: string;
  private backend?: BackendSpec;

  constructor(private readonly call: OpenAICall) {
    this.endpoint = call.endpoint;
    this.stream = call.endpoint !== 'embeddings' && call.body.stream === true;
    this.rawBody = call.rawBody;
  }

  attempt(backend: BackendSpec): AttemptSurface {
    this.backend = backend;
    return this;
  }

  upstreamHeaders(client: IncomingHttpHeaders, contentLength: number): Record<string, string | string[]> {
    return upstreamRequestHeaders(client, this.backend ? credentialHeaders(this.backend) : {}, contentLength);
  }

  upstreamRequest(model: string): UpstreamRequest {
    const transform = this.call.transform ?? NO_TRANSFORM;
    const { edits, reasoning } = this.backend ? transform.edits(this.call.body, this.backend, model) : {};
    return {
      path: this.call.path + this.call.query,
      body: upstreamBody(this.call, model, this.stream, edits),
      reasoning,
    };
  }

  answer(raw: Buffer, parsed: Record<string, unknown>): SurfaceAnswer {
    if (this.endpoint !== 'embeddings') {
      const answer = jsonAnswer(raw, parsed);
      if (this.thinkTags() && new ThinkTagsRelabel().relabelMessage(parsed))
        answer.body = Buffer.from(JSON.stringify(parsed));
      return answer;
    }
    return embeddingsAnswer(raw, parsed, this.call.body.encoding_format as EmbeddingEncoding | undefined);
  }

  streamTranslator(now: () => number): StreamTranslator {
    const options = this.call.body.stream_options as { include_usage?: unknown } | undefined;
    const tap = createUsageTap({
      clientWantsUsage: options?.include_usage === true,
      promptTokenEstimate: estimatePromptTokens(this.call.body),
      now,
    });
    return this.thinkTags() ? new ThinkTagsTap(tap) : tap;
  }

  /** The backend re-labels reasoning as `<think>` content (`reasoning_as_content: think_tags`). */
  private thinkTags(): boolean {
    return this.endpoint === 'chat' && this.backend?.reasoning_as_content === 'think_tags';
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

function jsonAnswer(raw: Buffer, parsed: Record<string, unknown>): { body: Buffer; usage?: Usage } {
  return { body: raw, usage: usageFromOpenAI(parsed) ?? usageFromLlamaCppTimings(parsed.timings) };
}

function embeddingsAnswer(raw: Buffer, parsed: Record<string, unknown>, encoding: EmbeddingEncoding | undefined) {
  const adapted = adaptEmbeddingsResponse(parsed, encoding);
  return { body: adapted === parsed ? raw : JSON.stringify(adapted), usage: jsonAnswer(raw, parsed).usage };
}

/** An OpenAI-shaped error as the stream's last `data:` event (the SDKs raise it). */
export function openAIErrorEvent(error: StreamError): string {
  const body =
    error.kind === 'refused'
      ? error.error.toOpenAI()
      : error.kind === 'upstream'
        ? asErrorEvent(error.status, error.text)
        : { error: { message: error.message, type: 'upstream_error', param: null, code: 'stream_interrupted' } };
  return formatSseData(JSON.stringify(body));
}
