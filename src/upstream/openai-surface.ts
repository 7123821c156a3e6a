/**
 * The OpenAI surfaces: chat completions, legacy completions and embeddings, passed through to
 * OpenAI-compatible backends. The client's bytes go up with only the gateway's fields edited
 * in (call-bytes.ts); the answer comes back as the backend's bytes, streams event by event
 * through the usage tap; embeddings are re-encoded to what the client asked for.
 */
import { adaptEmbeddingsResponse, type EmbeddingEncoding } from '../backends/embeddings-encoding.ts';
import { usageFromLlamaCppTimings } from '../backends/llama-cpp.ts';
import { asErrorEvent, estimatePromptTokens, upstreamBody } from './call-bytes.ts';
import { formatSseData } from './sse.ts';
import { createUsageTap } from './stream-usage.ts';
import type { CallSurface, StreamError } from './surface.ts';
import { usageFromOpenAI, type Usage } from './usage.ts';

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
}

export function openAISurface(call: OpenAICall): CallSurface {
  const stream = call.endpoint !== 'embeddings' && call.body.stream === true;
  const encoding = call.endpoint === 'embeddings' ? call.body.encoding_format as EmbeddingEncoding | undefined : undefined;
  const clientWantsUsage = (call.body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
  return {
    endpoint: call.endpoint,
    stream,
    rawBody: call.rawBody,
    upstreamRequest: (model) => ({ path: call.path + call.query, body: upstreamBody(call, model, stream) }),
    answer: call.endpoint === 'embeddings' ? (raw, parsed) => embeddingsAnswer(raw, parsed, encoding) : jsonAnswer,
    streamTranslator: (now) => createUsageTap({ clientWantsUsage, promptTokenEstimate: estimatePromptTokens(call.body), now }),
    upstreamErrorBody: (_status, text) => text,
    errorEvent: openAIErrorEvent,
  };
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
  const body = error.kind === 'refused' ? error.error.toOpenAI()
    : error.kind === 'upstream' ? asErrorEvent(error.status, error.text)
    : { error: { message: error.message, type: 'upstream_error', param: null, code: 'stream_interrupted' } };
  return formatSseData(JSON.stringify(body));
}
