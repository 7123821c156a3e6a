/**
 * `POST /api/show` asked of the Ollama server that serves the model (`type: ollama`): its own
 * answer (modelfile, template, details, capabilities such as `vision`) says more than the
 * gateway knows. A cheap read like the native read-backs: no scheduler slot, a deadline, and
 * on any failure nothing (the route answers from the gateway's memory instead).
 */
import type { Dispatcher } from 'undici';
import { credentialHeaders } from '../backends/credentials.ts';
import type { BackendRegistry, BackendState } from '../backends/registry.ts';
import { isObject, type JsonObject } from '../json.ts';
import { speaksOllamaNatively } from './ollama-surface.ts';

export interface OllamaShowDeps {
  registry: BackendRegistry;
  dispatcherFor: (backend: BackendState) => Dispatcher;
  /** The longest the read may take, ms. */
  timeoutMs: () => number;
}

export class OllamaShow {
  constructor(private readonly deps: OllamaShowDeps) {}

  /** `backendName`'s `/api/show` of `model` (its own id); undefined when it is no Ollama server or gave no answer. */
  async show(backendName: string, model: string, verbose: boolean): Promise<JsonObject | undefined> {
    const backend = this.deps.registry.get(backendName);
    if (!backend || !speaksOllamaNatively(backend.spec) || !backend.healthy) return undefined;
    const ms = this.deps.timeoutMs();
    try {
      const res = await this.deps.dispatcherFor(backend).request({
        path: `${backend.basePath}/api/show`,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...credentialHeaders(backend.spec) },
        body: JSON.stringify(verbose ? { model, verbose } : { model }),
        headersTimeout: ms,
        bodyTimeout: ms,
        signal: AbortSignal.timeout(ms),
      });
      if (res.statusCode !== 200) {
        await res.body.dump();
        return undefined;
      }
      const answer: unknown = await res.body.json();
      return isObject(answer) ? answer : undefined;
    } catch {
      return undefined;
    }
  }
}
