/**
 * An Ollama call on an Ollama server (`type: ollama`): the client's body byte for byte with only
 * `model` edited (the server's own id), sent to the same native endpoint, and the answer
 * relayed as it came (NDJSON line by line, or one JSON object) while the tap reads its counts.
 * Ollama's errors are already the client's shape.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { credentialHeaders } from '../backends/credentials.ts';
import type { BackendSpec } from '../config/types.ts';
import { usageFromOllama } from '../bridges/ollama/metrics.ts';
import { OllamaNativeTap } from '../bridges/ollama/native-stream-tap.ts';
import { upstreamRequestHeaders } from '../upstream/headers.ts';
import type { AttemptSurface, StreamTranslator, SurfaceAnswer, UpstreamRequest } from '../upstream/surface.ts';
import { editTopLevel } from '../wire/raw-json.ts';
import { estimatePromptTokens } from '../wire/prompt-tokens.ts';
import type { OllamaCall } from './ollama-call.ts';

export class OllamaPassthrough implements AttemptSurface {
  readonly upstreamFraming = 'ndjson' as const;

  constructor(
    private readonly call: OllamaCall,
    private readonly backend: BackendSpec,
  ) {}

  upstreamRequest(model: string): UpstreamRequest {
    const { body, rawBody, endpoint } = this.call;
    const text = body.model === model ? rawBody : editTopLevel(rawBody, new Map([['model', JSON.stringify(model)]]));
    return { path: `/api/${endpoint}`, body: text };
  }

  upstreamHeaders(client: IncomingHttpHeaders, contentLength: number): Record<string, string | string[]> {
    return upstreamRequestHeaders(client, credentialHeaders(this.backend), contentLength);
  }

  answer(raw: Buffer, parsed: Record<string, unknown>): SurfaceAnswer {
    return { body: raw, usage: usageFromOllama(parsed) };
  }

  streamTranslator(now: () => number): StreamTranslator {
    return new OllamaNativeTap(now, estimatePromptTokens(this.call.body));
  }

  upstreamErrorBody(_status: number, text: string): string {
    return text;
  }
}
