/**
 * A Messages call on an OpenAI-compatible backend: the pure bridge's chat-completions request
 * (made once per call and kept for failover), the answer made back into an Anthropic Message,
 * the stream translated event by event, and the backend's errors in Anthropic's shape. The
 * client's `anthropic-*` headers stay here: they mean nothing to a chat backend.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { usageFromLlamaCppTimings } from '../wire/llama-timings.ts';
import { estimateInputTokens } from '../wire/prompt-tokens.ts';
import { anthropicErrorFromUpstream } from '../bridges/anthropic/errors.ts';
import type { MessagesToChat } from '../bridges/anthropic/request.ts';
import { chatToMessage } from '../bridges/anthropic/response.ts';
import { ChatToMessagesStream } from '../bridges/anthropic/stream.ts';
import type { BridgeError } from '../bridges/anthropic/types.ts';
import { credentialHeaders } from '../backends/credentials.ts';
import type { BackendSpec } from '../config/types.ts';
import { badRequest } from '../errors.ts';
import { NO_TRANSFORM, transformText, type BodyTransform } from './body-transform.ts';
import { upstreamRequestHeaders } from '../upstream/headers.ts';
import type { AttemptSurface, StreamTranslator, SurfaceAnswer, UpstreamRequest } from '../upstream/surface.ts';
import { usageFromOpenAI } from '../wire/usage.ts';

export class TranslatedMessages implements AttemptSurface {
  /** Set when the request cannot be translated (the route answers 400 before any attempt). */
  readonly problem?: BridgeError;
  private readonly chat?: Record<string, unknown>;
  private readonly stopSequences?: string[];
  private credential: Record<string, string> = {};
  private backend?: BackendSpec;
  private promptTokens?: number;

  constructor(
    translated: MessagesToChat,
    private readonly body: Record<string, unknown>,
    private readonly requested: string,
    private readonly transform: BodyTransform = NO_TRANSFORM,
  ) {
    if (translated.ok) this.chat = translated.chat;
    else this.problem = translated.error;
    const stops = body.stop_sequences;
    if (Array.isArray(stops)) this.stopSequences = stops.filter((s): s is string => typeof s === 'string');
  }

  /** This call's attempt on `backend`: its credential, rules and defaults (failover may change the backend). */
  on(backend: BackendSpec): this {
    this.backend = backend;
    this.credential = credentialHeaders(backend);
    return this;
  }

  /**
   * Anthropic clients ask for big answers (Claude Code: `max_tokens` 32000–64000); a chat backend
   * with a smaller context refuses them (vLLM: 400 when prompt + max_tokens exceeds
   * max_model_len). When the backend's context is known and the request cannot fit it,
   * `max_tokens` is left out: the backend then writes until its context is full, the most the
   * client's limit would have allowed there anyway.
   */
  upstreamRequest(model: string, contextLength?: number): UpstreamRequest {
    const chat = this.chat;
    if (!chat) throw badRequest(this.problem!.message, this.problem!.param ?? null);
    chat.model = model;
    const asked = this.body.max_tokens as number;
    if (contextLength !== undefined && asked + this.promptEstimate() > contextLength) delete chat.max_tokens;
    else chat.max_tokens = asked;
    const done = transformText(JSON.stringify(chat), chat, this.transform, this.backend!, model);
    return { path: '/v1/chat/completions', body: done.text, reasoning: done.reasoning };
  }

  private promptEstimate(): number {
    return (this.promptTokens ??= estimateInputTokens(this.body));
  }

  upstreamHeaders(client: IncomingHttpHeaders, contentLength: number): Record<string, string | string[]> {
    const headers = upstreamRequestHeaders(client, this.credential, contentLength);
    for (const name of Object.keys(headers)) if (name.startsWith('anthropic-')) delete headers[name];
    return headers;
  }

  answer(_raw: Buffer, parsed: Record<string, unknown>): SurfaceAnswer {
    const usage = usageFromOpenAI(parsed) ?? usageFromLlamaCppTimings(parsed.timings);
    const made = chatToMessage(parsed, { model: this.requested, stopSequences: this.stopSequences });
    if (made.ok) return { body: JSON.stringify(made.message), usage };
    return {
      status: made.error.status,
      body: JSON.stringify({ type: 'error', error: { type: 'api_error', message: made.error.message } }),
      usage,
    };
  }

  streamTranslator(now: () => number): StreamTranslator {
    return new ChatToMessagesStream({
      model: this.requested,
      promptTokenEstimate: this.promptEstimate(),
      now,
      stopSequences: this.stopSequences,
    });
  }

  upstreamErrorBody(status: number, text: string): string {
    return JSON.stringify(anthropicErrorFromUpstream(status, text));
  }
}
