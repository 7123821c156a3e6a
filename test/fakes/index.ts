/**
 * The fake backend fleet: real HTTP servers on 127.0.0.1 that answer like llama.cpp, llama-swap,
 * vLLM, Ollama, OpenRouter and Together, with knobs for latency, pacing, errors, drops and stalls.
 *
 * Every kind: GET <url>/v1/models, POST <url>/v1/{chat/completions,completions,embeddings}
 * (OpenRouter's url already ends in /api). Besides:
 *   llamacpp   GET /health /v1/health /props /slots /models
 *   llamaswap  GET /health (text "OK") /running /unload, POST /api/models/unload
 *   vllm       GET /health /version
 *   ollama     GET / /api/tags /api/ps /api/version
 * and the audio endpoints (audio.ts): POST /v1/audio/speech on vllm, llamaswap and together,
 * /v1/audio/transcriptions on the same, /v1/audio/translations on vllm and together.
 * Model data is the fakes' own (catalogues.ts); conformance tests hold the shapes against
 * test/fixtures/llm.
 *
 * startAnthropicFake answers like api.anthropic.com (x-api-key or OAuth bearer, anthropic-version,
 * /v1/models, /v1/messages stream and not, /v1/messages/count_tokens); see anthropic-server.ts.
 */
import { startFake } from './server.ts';
import type { FakeBackend, FakeKind } from './types.ts';

export { startFake, apiPrefix } from './server.ts';
export { DEFAULT_KNOBS, FAKE_KINDS } from './types.ts';
export type { FakeBackend, FakeKind, FakeKnobs, RecordedRequest, StartFakeOptions } from './types.ts';
export { DEFAULT_MODELS, openRouterSpec, togetherSpec } from './catalogues.ts';
export { TOOL_ARGUMENTS, TOOL_NAME, contentWords } from './replies.ts';
export { embeddingVector, toBase64Float32, EMBEDDING_DIMENSIONS } from './embeddings.ts';
export { parseSse, type ParsedSse } from './sse.ts';
export {
  AUDIO_ROUTES,
  FAKE_DEFAULT_VOICE,
  SPEECH_CONTENT_TYPES,
  speechAudio,
  transcriptText,
  type AudioRoute,
} from './audio.ts';
export { assertSameShape, jsonType } from './shape.ts';

// The Anthropic Messages API fake (anthropic-server.ts): /v1/models, /v1/messages, count_tokens.
export { startAnthropicFake } from './anthropic-server.ts';
export {
  ANTHROPIC_FAKE_API_KEY,
  ANTHROPIC_FAKE_OAUTH_TOKEN,
  DEFAULT_ANTHROPIC_KNOBS,
  OAUTH_BETA,
  type AnthropicFake,
  type AnthropicKnobs,
  type RecordedAnthropicRequest,
  type StartAnthropicFakeOptions,
} from './anthropic-types.ts';
export { DEFAULT_ANTHROPIC_MODELS } from './anthropic-models.ts';
export { parseAnthropicSse, type AnthropicSseEvent, type ParsedAnthropicSse } from './anthropic-sse.ts';

/** Starts one fake of each kind given, with default models and knobs (all or none: a failure closes the rest). */
export async function startFleet(kinds: FakeKind[]): Promise<FakeBackend[]> {
  const settled = await Promise.allSettled(kinds.map((kind) => startFake(kind)));
  const started = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failure) {
    await Promise.all(started.map((f) => f.close()));
    throw failure.reason;
  }
  return started;
}
