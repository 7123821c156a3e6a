/**
 * A Responses call on a backend that speaks the Responses API itself (`responses: native`):
 * the client's bytes with `model` edited — and, when the conversation lives in the gateway's
 * store, the earlier turns put in front of `input` and `previous_response_id` taken out (that
 * id means nothing to the backend) — and the answer relayed untouched while the tap reads it.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { credentialHeaders } from '../backends/credentials.ts';
import type { BackendSpec } from '../config/types.ts';
import { upstreamRequestHeaders } from '../upstream/headers.ts';
import { editTopLevel } from '../wire/raw-json.ts';
import type { ResponsesCall } from './responses-call.ts';
import { ResponsesStreamTap } from './responses-stream-tap.ts';
import type { AttemptSurface, StreamTranslator, SurfaceAnswer, UpstreamRequest } from '../upstream/surface.ts';
import { CHAT_USAGE_RULE, estimateTokens } from '../wire/token-estimate.ts';
import { usageFromOpenAI } from '../wire/usage.ts';

export class NativeResponses implements AttemptSurface {
  private tap?: ResponsesStreamTap;
  private answered?: Record<string, unknown>;

  constructor(
    private readonly call: ResponsesCall,
    private readonly backend: BackendSpec,
  ) {}

  upstreamRequest(model: string): UpstreamRequest {
    const { body, rawBody, query, history } = this.call;
    const edits = new Map<string, string | null>();
    if (body.model !== model) edits.set('model', JSON.stringify(model));
    if (history?.length) {
      const input =
        typeof body.input === 'string'
          ? [{ role: 'user', content: body.input }]
          : ((body.input as unknown[] | undefined) ?? []);
      edits.set('input', JSON.stringify([...history, ...input]));
      edits.set('previous_response_id', null);
    }
    return { path: `/v1/responses${query}`, body: edits.size ? editTopLevel(rawBody, edits) : rawBody };
  }

  upstreamHeaders(client: IncomingHttpHeaders, contentLength: number): Record<string, string | string[]> {
    return upstreamRequestHeaders(client, credentialHeaders(this.backend), contentLength);
  }

  answer(raw: Buffer, parsed: Record<string, unknown>): SurfaceAnswer {
    this.answered = parsed;
    return { body: raw, usage: usageFromOpenAI(parsed) };
  }

  streamTranslator(now: () => number): StreamTranslator {
    this.tap = new ResponsesStreamTap(
      now,
      estimateTokens(
        typeof this.call.body.input === 'string' ? this.call.body.input : JSON.stringify(this.call.body.input ?? ''),
        CHAT_USAGE_RULE,
      ),
    );
    return this.tap;
  }

  upstreamErrorBody(_status: number, text: string): string {
    return text;
  }

  /** The backend that answered and the id it gave its Response (the one a foreground client is told). */
  origin(): { backend: string; id: string } | undefined {
    const id = (this.answered ?? this.tap?.final)?.id;
    return typeof id === 'string' && id !== '' ? { backend: this.backend.name, id } : undefined;
  }

  /** The backend's own Response, under the gateway's id (the one a background client was told). */
  finalResponse(): Record<string, unknown> | undefined {
    const final = this.answered ?? this.tap?.final;
    return final && Object.assign({}, final, { id: this.call.id });
  }
}
