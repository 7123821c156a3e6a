/**
 * `POST /v1/messages/count_tokens` without a scheduler slot (counting loads no model): the
 * first healthy candidate decides. An anthropic backend counts for real (the client's body,
 * `model` edited, sent straight to it); any other backend gets the bridge's estimate.
 */
import type { Dispatcher } from 'undici';
import type { BackendRegistry, BackendState } from '../backends/registry.ts';
import { estimateInputTokens } from '../wire/prompt-tokens.ts';
import { AnthropicPassthrough } from './anthropic-passthrough.ts';
import { forward, type UpstreamHeaders } from '../upstream/forward.ts';
import type { MessagesCall } from './messages-call.ts';
import { withKey } from '../backends/credentials.ts';
import { redactBackendText } from '../backends/secret-scrub.ts';
import type { Candidate } from '../scheduler/types.ts';
import type { IncomingHttpHeaders } from 'node:http';
import { kindOf, speaks } from '../backends/kinds/index.ts';

export type TokenCount =
  | { kind: 'counted'; backend: string; status: number; headers: UpstreamHeaders; body: string | Buffer }
  | { kind: 'estimated'; backend: string | null; inputTokens: number };

export interface CountTokensDeps {
  registry: BackendRegistry;
  dispatcherFor: (backend: BackendState) => Dispatcher;
  /** Longest wait for a backend's count. */
  timeoutMs: () => number;
}

export class TokenCounter {
  constructor(private readonly deps: CountTokensDeps) {}

  async count(call: MessagesCall, candidates: readonly Candidate[], headers: IncomingHttpHeaders): Promise<TokenCount> {
    const healthy = candidates
      .map((c) => ({ c, b: this.deps.registry.get(c.backend) }))
      .find(({ b }) => b?.healthy && b.spec.enabled);
    const backend = healthy?.b;
    if (!backend || !speaks(kindOf(backend.spec), 'count_tokens')) {
      return { kind: 'estimated', backend: backend?.name ?? null, inputTokens: estimateInputTokens(call.body) };
    }
    // a pool's key not muted (counting is the gateway's own request: no rotation)
    const spec = backend.keys ? withKey(backend.spec, backend.keys.peek(Date.now())) : backend.spec;
    const wire = new AnthropicPassthrough(call, spec);
    const request = wire.upstreamRequest(healthy!.c.model);
    const timeout = AbortSignal.timeout(this.deps.timeoutMs());
    const result = await forward({
      dispatcher: this.deps.dispatcherFor(backend),
      path: backend.basePath + request.path.replace('/v1/messages', '/v1/messages/count_tokens'),
      headers: wire.upstreamHeaders(headers, Buffer.byteLength(request.body)),
      body: request.body,
      signal: timeout,
      stream: false,
    });
    switch (result.kind) {
      case 'ok-json':
        return { kind: 'counted', backend: backend.name, status: 200, headers: result.headers, body: result.raw };
      case 'upstream-status':
        // the gateway's own credential refused: not the client's business, so estimate instead
        if (result.status === 401 || result.status === 403) break;
        return {
          kind: 'counted',
          backend: backend.name,
          status: result.status,
          headers: result.headers,
          body: redactBackendText(result.text, backend.spec),
        };
    }
    // unreachable, broken or refusing the gateway's key: an estimate is better than no answer
    return { kind: 'estimated', backend: backend.name, inputTokens: estimateInputTokens(call.body) };
  }
}
