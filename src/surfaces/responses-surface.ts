/**
 * The Responses surface (`POST /v1/responses`): the Vercel AI SDK, LangChain.js, N8N. Each
 * attempt picks its wire format by the backend: `responses: native` gets the client's body
 * (model edited; a gateway-stored conversation expanded into `input`) and its stream relayed
 * untouched; every other backend a chat-completions call from the pure bridge, its answer and
 * stream translated back. The call's final Response (from whichever attempt answered) is kept
 * for the store: background runs and `store: true`.
 */
import type { BackendSpec } from '../config/types.ts';
import type { FinalResponseSource, ResponsesCall } from './responses-call.ts';
import { NativeResponses } from './responses-native.ts';
import { TranslatedResponses } from './responses-translated.ts';
import { formatSseEvent } from '../wire/sse.ts';
import type { AttemptSurface, CallSurface, StreamError } from '../upstream/surface.ts';

export class ResponsesSurface implements CallSurface {
  readonly endpoint = 'responses';
  readonly stream: boolean;
  readonly rawBody: string;
  private translated?: TranslatedResponses;
  private last?: FinalResponseSource;

  constructor(private readonly call: ResponsesCall) {
    this.stream = call.body.stream === true;
    this.rawBody = call.rawBody;
  }

  /** What a chat backend could not be sent (the route answers 400 before the call takes a slot). */
  translationProblem(): { status: number; message: string; param?: string } | undefined {
    return this.translation().problem;
  }

  attempt(backend: BackendSpec): AttemptSurface {
    const wire =
      backend.responses === 'native' ? new NativeResponses(this.call, backend) : this.translation().on(backend);
    this.last = wire;
    return wire;
  }

  /** The last answer came from a native backend (under its own id, which the gateway does not store). */
  answeredNatively(): boolean {
    return this.last instanceof NativeResponses;
  }

  /** Which native backend answered, under which of its own ids; undefined when a chat backend did. */
  nativeOrigin(): { backend: string; id: string } | undefined {
    return this.last instanceof NativeResponses ? this.last.origin() : undefined;
  }

  /** The Response the client got (or, for a broken stream, as far as it went); undefined before any answer. */
  finalResponse(): Record<string, unknown> | undefined {
    return this.last?.finalResponse();
  }

  /** A refusal or break outside a translator's own sequence: the Responses stream's `error` event. */
  errorEvent(error: StreamError): string {
    const { code, message } =
      error.kind === 'refused'
        ? { code: error.error.code, message: error.error.message }
        : error.kind === 'upstream'
          ? { code: String(error.status), message: upstreamMessage(error.text) }
          : { code: 'stream_interrupted', message: error.message };
    return formatSseEvent('error', JSON.stringify({ type: 'error', code, message, param: null, sequence_number: 0 }));
  }

  keepaliveFrame(status: string): string {
    return `: ${status}\n\n`;
  }

  private translation(): TranslatedResponses {
    this.translated ??= new TranslatedResponses(this.call);
    return this.translated;
  }
}

function upstreamMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } };
    if (typeof parsed?.error?.message === 'string') return parsed.error.message;
  } catch {
    /* not JSON */
  }
  return text.slice(0, 2000);
}
