/** Public types of the fake backend fleet (see index.ts). */

export type FakeKind = 'llamacpp' | 'llamaswap' | 'vllm' | 'ollama' | 'openrouter' | 'together';

export const FAKE_KINDS: readonly FakeKind[] = ['llamacpp', 'llamaswap', 'vllm', 'ollama', 'openrouter', 'together'];

/** Behaviour switches; they apply to chat/completions/embeddings unless said otherwise. */
export interface FakeKnobs {
  /** Delay before the response head (ms). */
  latencyMs: number;
  /** Stream pacing, one chunk ≈ one token; 0 = as fast as possible. */
  tokensPerSecond: number;
  /** Content chunks per reply (also the completion token count, non-stream too). */
  chunkCount: number;
  /** 0 = off; else answer with this status and `errorBody`. */
  errorStatus: number;
  /** Body for `errorStatus`; default: the kind's own error shape. A string is sent as text/plain. */
  errorBody?: unknown;
  /**
   * With `errorStatus`: only the next N generation requests get the error, later ones are served
   * normally ("500 × 3 then healthy"); 0 = every request. Counted from start, or from a setKnobs
   * that sets `errorCount` or `errorStatus`. Requests refused earlier (unknown model) do not count.
   */
  errorCount: number;
  /** With `errorStatus`: the `retry-after` header of the error answer (e.g. '7'); undefined = none. */
  retryAfter?: string;
  /** -1 = off; destroy the socket after N content chunks (no [DONE]). Non-stream: destroy before the body. */
  dropAfterChunks: number;
  /** -1 = off; send N content chunks and then nothing, socket open until close(). Non-stream: never answer. */
  stallAfterChunks: number;
  /** Reply with a get_weather tool call whose JSON arguments are split over `chunkCount` chunks. */
  toolCall: boolean;
  /** With `toolCall`: the function name instead of get_weather's. */
  toolCallName?: string;
  /** With `toolCall`: the JSON argument text instead of get_weather's (still split over `chunkCount` chunks). */
  toolCallArguments?: string;
  /** With `toolCall`: that many calls in one reply (tool_calls[].index 0, 1, …), each with the name and arguments above. */
  parallelToolCalls: number;
  /**
   * With `toolCall`: call only when the request's last message is not a tool result, so an agent
   * loop's second turn gets text and the loop ends. false = call on every request.
   */
  toolCallOnce: boolean;
  /**
   * Reasoning deltas before the content (chat only), in the field the real server uses:
   * `reasoning_content` (llama.cpp, llama-swap, vLLM) or `reasoning` (Ollama, OpenRouter,
   * Together); non-stream in choices[0].message. They count as content chunks for pacing, drops
   * and stalls, and as completion tokens (OpenRouter: completion_tokens_details.reasoning_tokens).
   */
  reasoningChunks: number;
  /**
   * llamacpp: for this long after start (or after a setKnobs that sets it) every endpoint answers
   * 503 "Loading model". llamaswap: the swap delay when a request needs a model that is not loaded.
   */
  loadingMs: number;
  /** llamaswap: chat/completions/embeddings → 502 text "unable to start process: ...". */
  unableToStart: boolean;
  /** Honour stream_options.include_usage; false imitates an old server that ignores it. */
  includeUsage: boolean;
  /** Reset new connections (and requests on kept-alive ones) at once, like a dead host. */
  refuse: boolean;
  /** Streams: silence between the response head and the first chunk (a long prefill), ms. */
  prefillMs: number;
  /** Prompt tokens reported as prompt-cache hits (`prompt_tokens_details.cached_tokens`). */
  cachedPromptTokens: number;
  /**
   * Send the 200 response head (text/event-stream for streams, application/json otherwise) and
   * then nothing, the socket open until the client goes away or close(). errorStatus wins.
   */
  headThenSilence: boolean;
  /**
   * Non-stream answers (embeddings too): 200 with `content-type: application/json` and a complete
   * body that is not JSON, the real reply cut in half (`{"id":…` without its end). Streams are
   * not affected.
   */
  garbageJson: boolean;
  /**
   * Non-stream answers (embeddings too): the 200 head and the first half of the JSON body, then
   * nothing, the socket open until the client goes away or close() (a backend that hangs
   * mid-answer). Streams are not affected; errorStatus and headThenSilence win.
   */
  halfBodyThenSilence: boolean;
  /** /v1/audio/speech: announce the audio's `content-length` (otherwise it goes out chunked). */
  audioContentLength: boolean;
}

export const DEFAULT_KNOBS: Readonly<FakeKnobs> = Object.freeze({
  latencyMs: 0,
  tokensPerSecond: 0,
  chunkCount: 8,
  errorStatus: 0,
  errorBody: undefined,
  errorCount: 0,
  retryAfter: undefined,
  dropAfterChunks: -1,
  stallAfterChunks: -1,
  toolCall: false,
  toolCallName: undefined,
  toolCallArguments: undefined,
  parallelToolCalls: 1,
  toolCallOnce: false,
  reasoningChunks: 0,
  loadingMs: 0,
  unableToStart: false,
  includeUsage: true,
  refuse: false,
  cachedPromptTokens: 0,
  prefillMs: 0,
  headThenSilence: false,
  garbageJson: false,
  halfBodyThenSilence: false,
  audioContentLength: false,
});

export interface RecordedRequest {
  method: string;
  path: string;
  /** The raw query string without the leading '?' ('' when none). */
  query: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body; the raw text when it is not JSON; undefined when empty. */
  body: any;
  startedAt: number;
  endedAt?: number;
}

export interface FakeBackend {
  kind: FakeKind;
  /** Base URL without /v1, e.g. http://127.0.0.1:PORT (openrouter: http://127.0.0.1:PORT/api). */
  url: string;
  port: number;
  models: string[];
  /** Live knobs; mutate through setKnobs (or directly). */
  knobs: FakeKnobs;
  setKnobs(patch: Partial<FakeKnobs>): void;
  /** Every request, in arrival order. */
  requests: RecordedRequest[];
  /** chat/completions/embeddings being served now, and the most ever seen at once. */
  inflight: number;
  maxInflight: number;
  /** Last user message text (or prompt / input) of each request, in the order responses started. */
  servedOrder: string[];
  /** Closes the server and destroys open sockets. */
  close(): Promise<void>;
}

export interface StartFakeOptions {
  models?: string[];
  knobs?: Partial<FakeKnobs>;
  /** When set, requests need `Authorization: Bearer <apiKey>` (except the kind's public paths). */
  apiKey?: string;
  port?: number;
  /** llamacpp: number of slots in /slots and /props (default 4). */
  slots?: number;
}
