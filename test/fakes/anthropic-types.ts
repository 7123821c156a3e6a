/** Public types of the fake Anthropic Messages API (see anthropic-server.ts). */

/** Behaviour switches; they apply to POST /v1/messages unless said otherwise. */
export interface AnthropicKnobs {
  /** Delay before the response head (ms). */
  latencyMs: number;
  /** Stream pacing, one content_block_delta ≈ one token; 0 = as fast as possible. Non-stream waits as long in total. */
  tokensPerSecond: number;
  /** text_delta events of the reply (also the thinking_delta count and the tool-input slices). */
  chunkCount: number;
  /** 0 = off; else answer with this status and the real API's error body for it. */
  errorStatus: number;
  /**
   * With `errorStatus`: only the next N messages requests get the error, later ones are served
   * normally; 0 = every request. Counted from start, or from a setKnobs that sets `errorCount`
   * or `errorStatus`. Requests refused earlier (auth, validation, unknown model) do not count.
   */
  errorCount: number;
  /** The `retry-after` header of an `errorStatus` answer; undefined = '1' for 429 and 529, none otherwise. */
  retryAfter?: string;
  /**
   * -1 = off; after N content_block_delta events send `event: error` (overloaded_error) and end
   * the response, as the real API does when it overloads mid-stream. Non-stream: a 529 answer.
   */
  overloadedMidStream: number;
  /** -1 = off; destroy the socket after N SSE events (pings included). Non-stream: destroy before the body. */
  dropAfterEvents: number;
  /** Reset new connections (and requests on kept-alive ones) at once, like a dead host. */
  refuse: boolean;
  /** Send the 200 head (text/event-stream or application/json) and then nothing until the client goes away or close(). */
  headThenSilence: boolean;
  /**
   * Non-stream: the 200 head and the first half of the message's JSON, then nothing until the
   * client goes away or close(). Streams are not affected; errors and headThenSilence win.
   */
  halfBodyThenSilence: boolean;
  /** A tool name: when the request's `tools` has it, the reply ends with a tool_use block for it. */
  toolUse?: string;
  /** The tool_use block's `input`. */
  toolInput: Record<string, unknown>;
  /**
   * With `toolUse`: no tool_use when the last user message carries a tool_result (the loop's
   * second turn gets text), so an agent loop terminates.
   */
  toolUseOnce: boolean;
  /** cache_read_input_tokens reported when the request has any `cache_control` (else 0). */
  cacheReadTokens: number;
  /** cache_creation_input_tokens reported when the request has any `cache_control` (else 0). */
  cacheWriteTokens: number;
  /** GET /v1/models: 0 = normal; 401/403/404 = that error instead (a subscription token cannot list models). */
  modelsStatus: number;
}

export const DEFAULT_ANTHROPIC_KNOBS: Readonly<AnthropicKnobs> = Object.freeze({
  latencyMs: 0,
  tokensPerSecond: 0,
  chunkCount: 8,
  errorStatus: 0,
  errorCount: 0,
  retryAfter: undefined,
  overloadedMidStream: -1,
  dropAfterEvents: -1,
  refuse: false,
  headThenSilence: false,
  halfBodyThenSilence: false,
  toolUse: undefined,
  toolInput: Object.freeze({ city: 'New York City', unit: 'celsius' }) as Record<string, unknown>,
  toolUseOnce: false,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  modelsStatus: 0,
});

/** The key and token the fake accepts unless told otherwise (the real API always wants one). */
export const ANTHROPIC_FAKE_API_KEY = 'sk-ant-api03-fake-key';
export const ANTHROPIC_FAKE_OAUTH_TOKEN = 'sk-ant-oat01-fake-token';
/** The beta that makes the real API accept an OAuth bearer token. */
export const OAUTH_BETA = 'oauth-2025-04-20';

export interface RecordedAnthropicRequest {
  method: string;
  path: string;
  /** The raw query string without the leading '?' ('' when none). */
  query: string;
  headers: Record<string, string | string[] | undefined>;
  /** The body exactly as received, as UTF-8 text ('' when empty). */
  rawBody: string;
  /** The parsed JSON body; undefined when empty or not JSON. */
  body: any;
  startedAt: number;
  endedAt?: number;
}

export interface AnthropicFake {
  /** Base URL without /v1, e.g. http://127.0.0.1:PORT (what the SDK's baseURL wants). */
  url: string;
  port: number;
  models: string[];
  /** Live knobs; mutate through setKnobs (or directly). */
  knobs: AnthropicKnobs;
  setKnobs(patch: Partial<AnthropicKnobs>): void;
  /** Every request, in arrival order. */
  requests: RecordedAnthropicRequest[];
  /** POST /v1/messages being served now, and the most ever seen at once. */
  inflight: number;
  maxInflight: number;
  /** Closes the server and destroys open sockets. */
  close(): Promise<void>;
}

export interface StartAnthropicFakeOptions {
  models?: string[];
  /** The `x-api-key` (or API-key bearer) accepted; default ANTHROPIC_FAKE_API_KEY. */
  apiKey?: string;
  /** The OAuth bearer accepted with the oauth beta; default ANTHROPIC_FAKE_OAUTH_TOKEN. */
  oauthToken?: string;
  knobs?: Partial<AnthropicKnobs>;
  port?: number;
}
