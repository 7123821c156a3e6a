/**
 * Ollama's native API (`/api/chat`, `/api/generate`, `/api/embed`, `/api/embeddings`), for the
 * clients that speak only it: Open WebUI's Ollama connection, Home Assistant, Continue, the
 * `ollama` libraries. Each attempt picks its wire format by the backend's kind: an Ollama
 * server gets the client's bytes (ollama-passthrough.ts), any other chat backend a
 * chat-completions (or embeddings) call translated by the pure bridge (ollama-translated.ts).
 * Whichever answered, the client sees Ollama's shapes: NDJSON streams (`application/x-ndjson`,
 * on unless `stream: false`), errors as `{"error": "…"}`, a stream's last word as such a line.
 *
 * While a call waits in the queue its stream is kept open with single spaces: a line parser
 * (every Ollama client reads whole lines) sees them as whitespace before the next object,
 * which JSON allows; a blank line or an SSE comment would be a line that is not JSON.
 */
import { kindOf, speaks } from '../backends/kinds/index.ts';
import type { BackendSpec } from '../config/types.ts';
import { ollamaErrorFromUpstream, ollamaErrorLine } from '../bridges/ollama/errors.ts';
import type { OllamaProblem } from '../bridges/ollama/types.ts';
import { formatNdjsonLine } from '../wire/ndjson.ts';
import type { AttemptSurface, CallSurface, StreamError } from '../upstream/surface.ts';
import type { OllamaCall } from './ollama-call.ts';
import { OllamaPassthrough } from './ollama-passthrough.ts';
import { TranslatedOllama } from './ollama-translated.ts';

export type { OllamaCall, OllamaEndpoint } from './ollama-call.ts';

export const NDJSON_CONTENT_TYPE = 'application/x-ndjson';

/** Whether a backend speaks Ollama's native API, so the client's call passes through (its kind's descriptor says). */
export function speaksOllamaNatively(backend: Pick<BackendSpec, 'type'>): boolean {
  return speaks(kindOf(backend), 'ollama');
}

export class OllamaSurface implements CallSurface {
  readonly endpoint: string;
  readonly stream: boolean;
  readonly rawBody: string;
  readonly streamContentType = NDJSON_CONTENT_TYPE;
  private translated?: TranslatedOllama;
  /** The attempt under way is a translated one (its stream's failure words end a broken stream). */
  private translating = false;

  constructor(private readonly call: OllamaCall) {
    this.endpoint = `ollama-${call.endpoint}`;
    const generates = call.endpoint === 'chat' || call.endpoint === 'generate';
    // Ollama streams unless told not to
    this.stream = generates && call.body.stream !== false;
    this.rawBody = call.rawBody;
  }

  /** What a chat backend could not be sent (the client's mistake, or a field only Ollama serves). */
  translationProblem(): OllamaProblem | undefined {
    return this.translation().problem;
  }

  attempt(backend: BackendSpec): AttemptSurface {
    this.translating = !speaksOllamaNatively(backend);
    if (!this.translating) return new OllamaPassthrough(this.call, backend);
    return this.translation().on(backend);
  }

  errorEvent(error: StreamError): string {
    if (error.kind === 'refused') return ollamaErrorLine(error.error.message);
    if (error.kind === 'upstream') return ollamaErrorLine(ollamaErrorFromUpstream(error.status, error.text).error);
    // a failed-over translated attempt's words are not this attempt's
    const translatedFailure = this.translating ? this.translated?.streamFailure() : undefined;
    return ollamaErrorLine(translatedFailure ?? error.message);
  }

  keepaliveFrame(): string {
    return ' ';
  }

  jsonStreamFrame(json: string): string {
    return formatNdjsonLine(json);
  }

  private translation(): TranslatedOllama {
    return (this.translated ??= new TranslatedOllama(this.call, this.stream));
  }
}
