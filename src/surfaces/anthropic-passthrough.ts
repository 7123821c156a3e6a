/**
 * A Messages call on an anthropic backend: the client's body byte for byte with only `model`
 * edited (cache_control breakpoints, thinking signatures and betas survive untouched), the
 * client's `anthropic-version` / `anthropic-beta` passed on, the backend's credential added,
 * and the answer relayed as it came while the tap reads its usage.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { anthropicBeta, anthropicCredential, DEFAULT_ANTHROPIC_VERSION } from '../backends/kinds/anthropic.ts';
import type { BackendSpec } from '../config/types.ts';
import { estimateInputTokens } from '../wire/prompt-tokens.ts';
import { AnthropicStreamTap } from './anthropic-stream-tap.ts';
import { upstreamRequestHeaders } from '../upstream/headers.ts';
import type { MessagesCall } from './messages-call.ts';
import { editTopLevel } from '../wire/raw-json.ts';
import type { AttemptSurface, StreamTranslator, SurfaceAnswer, UpstreamRequest } from '../upstream/surface.ts';
import { usageFromAnthropic } from '../wire/usage.ts';

export class AnthropicPassthrough implements AttemptSurface {
  constructor(
    private readonly call: MessagesCall,
    private readonly backend: BackendSpec,
  ) {}

  upstreamRequest(model: string): UpstreamRequest {
    const { body, rawBody, query } = this.call;
    const text = body.model === model ? rawBody : editTopLevel(rawBody, new Map([['model', JSON.stringify(model)]]));
    return { path: `/v1/messages${query}`, body: text };
  }

  upstreamHeaders(client: IncomingHttpHeaders, contentLength: number): Record<string, string | string[]> {
    const headers = upstreamRequestHeaders(client, anthropicCredential(this.backend), contentLength);
    if (headers['anthropic-version'] === undefined) headers['anthropic-version'] = DEFAULT_ANTHROPIC_VERSION;
    const beta = anthropicBeta(this.backend, client['anthropic-beta']);
    if (beta === undefined) delete headers['anthropic-beta'];
    else headers['anthropic-beta'] = beta;
    return headers;
  }

  answer(raw: Buffer, parsed: Record<string, unknown>): SurfaceAnswer {
    return { body: raw, usage: usageFromAnthropic(parsed) };
  }

  streamTranslator(now: () => number): StreamTranslator {
    return new AnthropicStreamTap(now, estimateInputTokens(this.call.body));
  }

  /** Anthropic's own error body is already the client's shape. */
  upstreamErrorBody(_status: number, text: string): string {
    return text;
  }
}
