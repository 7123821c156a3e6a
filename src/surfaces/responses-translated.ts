/**
 * A Responses call on a chat backend: the pure bridge's chat-completions request (made once
 * per call, kept for failover), the backend's per-attempt edits (reasoning switch, sampling
 * defaults), the answer made back into a Response, the stream translated event by event with
 * `response.failed` as its last word when it breaks.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { usageFromLlamaCppTimings } from '../wire/llama-timings.ts';
import { credentialHeaders } from '../backends/credentials.ts';
import type { BackendSpec } from '../config/types.ts';
import { responsesToChat } from '../bridges/responses/request.ts';
import { chatToResponse } from '../bridges/responses/response.ts';
import { ChatToResponsesStream } from '../bridges/responses/stream.ts';
import { badRequest } from '../errors.ts';
import { transformText } from './body-transform.ts';
import { estimatePromptTokens } from '../wire/prompt-tokens.ts';
import { upstreamRequestHeaders } from '../upstream/headers.ts';
import type { ResponsesCall } from './responses-call.ts';
import type { AttemptSurface, StreamTranslator, SurfaceAnswer, UpstreamRequest } from '../upstream/surface.ts';
import { usageFromOpenAI } from '../wire/usage.ts';

export class TranslatedResponses implements AttemptSurface {
  readonly problem?: { status: number; message: string; param?: string };
  private readonly chat?: Record<string, unknown>;
  private backend?: BackendSpec;
  private stream?: ChatToResponsesStream;
  private answered?: Record<string, unknown>;

  constructor(private readonly call: ResponsesCall) {
    const translated = responsesToChat(call.body, {
      model: call.requested,
      stream: call.body.stream === true,
      history: call.history,
      resolveItem: call.resolveItem,
    });
    if (translated.ok) this.chat = translated.chat;
    else this.problem = translated.error;
  }

  /** This call's attempt on `backend` (its credential, rules and defaults). */
  on(backend: BackendSpec): this {
    this.backend = backend;
    this.stream = undefined;
    this.answered = undefined;
    return this;
  }

  upstreamRequest(model: string): UpstreamRequest {
    const chat = this.chat;
    if (!chat) throw badRequest(this.problem!.message, this.problem!.param ?? null);
    chat.model = model;
    const done = transformText(JSON.stringify(chat), chat, this.call.transform, this.backend!, model);
    return { path: '/v1/chat/completions', body: done.text, reasoning: done.reasoning };
  }

  upstreamHeaders(client: IncomingHttpHeaders, contentLength: number): Record<string, string | string[]> {
    return upstreamRequestHeaders(client, this.backend ? credentialHeaders(this.backend) : {}, contentLength);
  }

  answer(_raw: Buffer, parsed: Record<string, unknown>): SurfaceAnswer {
    const usage = usageFromOpenAI(parsed) ?? usageFromLlamaCppTimings(parsed.timings);
    const made = chatToResponse(parsed, this.responseOpts());
    if (!made.ok) {
      return {
        status: made.error.status,
        body: JSON.stringify({
          error: {
            message: made.error.message,
            type: 'upstream_error',
            param: null,
            code: made.error.code ?? 'untranslatable_answer',
          },
        }),
        usage,
      };
    }
    this.answered = made.response;
    return { body: JSON.stringify(made.response), usage };
  }

  streamTranslator(now: () => number): StreamTranslator {
    this.stream = new ChatToResponsesStream({
      ...this.responseOpts(),
      now,
      promptTokenEstimate: estimatePromptTokens(this.chat ?? {}),
    });
    return this.stream;
  }

  /** A chat backend's error is already OpenAI-shaped: it passes as it came. */
  upstreamErrorBody(_status: number, text: string): string {
    return text;
  }

  finalResponse(): Record<string, unknown> | undefined {
    return this.answered ?? this.stream?.finalResponse();
  }

  private responseOpts() {
    const { id, createdAt, requested, body } = this.call;
    return { id, createdAt, model: requested, request: body };
  }
}
