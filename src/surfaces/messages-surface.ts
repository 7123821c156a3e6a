/**
 * The Anthropic Messages surface (`POST /v1/messages`): Claude Code and the Anthropic SDKs.
 * Each attempt picks its wire format by the backend's kind: an anthropic backend gets the
 * client's bytes (anthropic-passthrough.ts), an OpenAI-compatible one a chat-completions call
 * translated by the pure bridge (messages-translated.ts). Whichever answered, the client sees
 * Anthropic's shapes: errors as `{type:"error",error:{type,message}}`, a stream's last word as
 * an `event: error`, and `event: ping` while the call waits.
 */
import type { BackendSpec } from '../config/types.ts';
import { messagesToChat } from '../bridges/anthropic/request.ts';
import { anthropicErrorFromUpstream } from '../bridges/anthropic/errors.ts';
import { anthropicErrorEvent } from '../bridges/anthropic/stream.ts';
import type { BridgeError } from '../bridges/anthropic/types.ts';
import { fromAnthropicIntent } from '../bridges/reasoning/switch.ts';
import { NO_TRANSFORM } from './body-transform.ts';
import { AnthropicPassthrough } from './anthropic-passthrough.ts';
import { TranslatedMessages } from './messages-translated.ts';
import type { AttemptSurface, CallSurface, StreamError } from '../upstream/surface.ts';
import type { MessagesCall } from './messages-call.ts';
import { kindOf, speaks } from '../backends/kinds/index.ts';

/** Anthropic's keep-alive event (the SDKs skip it); the status text has nowhere to go. */
const PING = 'event: ping\ndata: {"type": "ping"}\n\n';

export type { MessagesCall } from './messages-call.ts';

export class MessagesSurface implements CallSurface {
  readonly endpoint = 'messages';
  readonly stream: boolean;
  readonly rawBody: string;
  /** One translation per `prompt_cache` setting, made on first use and kept for failover. */
  private readonly translations = new Map<boolean, TranslatedMessages>();

  constructor(private readonly call: MessagesCall) {
    this.stream = call.body.stream === true;
    this.rawBody = call.rawBody;
  }

  /**
   * What a chat backend could not be sent: the request's mistakes, found before the call takes
   * a slot. Only asked when a translating backend is among the candidates (an anthropic
   * backend judges its own requests, new block types included).
   */
  translationProblem(): BridgeError | undefined {
    return this.translation(false).problem;
  }

  attempt(backend: BackendSpec): AttemptSurface {
    if (speaks(kindOf(backend), 'messages')) return new AnthropicPassthrough(this.call, backend);
    return this.translation(backend.prompt_cache === true).on(backend);
  }

  errorEvent(error: StreamError): string {
    if (error.kind === 'refused') {
      const body = error.error.toAnthropic();
      return anthropicErrorEvent(body.error.type, body.error.message);
    }
    if (error.kind === 'upstream') {
      const body = anthropicErrorFromUpstream(error.status, error.text);
      return anthropicErrorEvent(body.error.type, body.error.message);
    }
    return anthropicErrorEvent('api_error', error.message);
  }

  keepaliveFrame(): string {
    return PING;
  }

  private translation(promptCache: boolean): TranslatedMessages {
    let t = this.translations.get(promptCache);
    if (!t) {
      const { body, requested } = this.call;
      const translated = messagesToChat(body, { model: requested, stream: this.stream, promptCache });
      const want = translated.ok ? fromAnthropicIntent(translated.reasoning) : undefined;
      const transform = this.call.transformFor?.(want) ?? NO_TRANSFORM;
      t = new TranslatedMessages(translated, body, requested, transform);
      this.translations.set(promptCache, t);
    }
    return t;
  }
}
