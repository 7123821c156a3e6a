/**
 * Reads which models a box holds loaded, from the box itself, never loading one:
 * - llama-swap `GET /running` → `{running: [{model, state, …}]}`; `ready` and `starting` count;
 * - Ollama `GET /api/ps` → `{models: [{name, model, size, expires_at, …}]}`, all loaded;
 * - LM Studio `GET /api/v0/models` → `{data: [{id, state: "loaded" | "not-loaded", …}]}`;
 * - vLLM and llama.cpp serve every model they list.
 * The kind comes from the model list's `owned_by` (`llama-swap`, `vllm`, `llamacpp`); an unpaid
 * OpenAI-compatible box that says none of these is asked `/api/ps`, then `/api/v0/models`, then
 * `/running` (a llama-swap whose model list names another owner), once per spec, and remembered
 * (a box that answers none is `unknown`, never asked again).
 */
import { request, type Dispatcher } from 'undici';
import type { BackendSpec } from '../config/types.ts';
import { isObject } from '../json.ts';
import { basePath } from './pools.ts';
import { credentialHeaders } from './credentials.ts';
import { kindOf } from './kinds/index.ts';
import type { ResidencyKind, ResidencyReading } from './residency.ts';
import type { ModelInfo } from './types.ts';

/** llama-swap process states that hold (or are loading) the model. */
const RUNNING_STATES = new Set(['ready', 'starting']);

const OWNER_KINDS: Record<string, ResidencyKind> = { 'llama-swap': 'llama-swap', vllm: 'vllm', llamacpp: 'llama.cpp' };

/** The loaded models of a llama-swap `/running` body; throws when it is not one. */
export function parseLlamaSwapRunning(body: unknown): string[] {
  if (!isObject(body) || !Array.isArray(body.running)) throw new Error('/running body has no "running" array');
  return body.running.flatMap((r) =>
    isObject(r) && typeof r.model === 'string' && RUNNING_STATES.has(String(r.state)) ? [r.model] : [],
  );
}

/** The loaded models of an Ollama `/api/ps` body; throws when it is not one. */
export function parseOllamaPs(body: unknown): string[] {
  if (!isObject(body) || !Array.isArray(body.models)) throw new Error('/api/ps body has no "models" array');
  return body.models.flatMap((m) => {
    if (!isObject(m)) return [];
    const name = typeof m.model === 'string' && m.model ? m.model : m.name;
    return typeof name === 'string' && name ? [name] : [];
  });
}

/** The loaded models of an LM Studio `/api/v0/models` body; throws when entries carry no `state`. */
export function parseLmStudioModels(body: unknown): string[] {
  if (!isObject(body) || !Array.isArray(body.data)) throw new Error('/api/v0/models body has no "data" array');
  if (!body.data.every((m) => isObject(m) && typeof m.id === 'string' && typeof m.state === 'string')) {
    throw new Error('/api/v0/models entries carry no "state"');
  }
  return body.data.flatMap((m) => (isObject(m) && m.state === 'loaded' ? [String(m.id)] : []));
}

const READERS: Partial<Record<ResidencyKind, { path: string; parse: (body: unknown) => string[] }>> = {
  'llama-swap': { path: '/running', parse: parseLlamaSwapRunning },
  ollama: { path: '/api/ps', parse: parseOllamaPs },
  lmstudio: { path: '/api/v0/models', parse: parseLmStudioModels },
};

/** Kinds tried, in order, on a box whose model list does not say what it is. */
const SNIFFED: ResidencyKind[] = ['ollama', 'lmstudio', 'llama-swap'];

class NotThisKind extends Error {}

export class ResidencyReader {
  /** The kind found per spec (a changed spec is a new object: asked again). */
  private readonly kinds = new WeakMap<BackendSpec, ResidencyKind>();

  constructor(private readonly timeoutMs: number) {}

  /** What `spec`'s box holds now; throws on a box that answered before and fails now. */
  async read(spec: BackendSpec, models: ModelInfo[], dispatcher: Dispatcher): Promise<ResidencyReading> {
    const kind = this.kinds.get(spec) ?? ownerKind(spec, models);
    if (kind === 'vllm' || kind === 'llama.cpp') return { kind, mode: 'all-listed', loaded: models.map((m) => m.id) };
    if (kind === 'unknown') return { kind, mode: 'unknown', loaded: [] };
    if (kind) return { kind, mode: 'swap', loaded: await this.fetchLoaded(spec, kind, dispatcher) };
    for (const candidate of SNIFFED) {
      try {
        const loaded = await this.fetchLoaded(spec, candidate, dispatcher);
        this.kinds.set(spec, candidate);
        return { kind: candidate, mode: 'swap', loaded };
      } catch (err) {
        if (!(err instanceof NotThisKind)) throw err;
      }
    }
    this.kinds.set(spec, 'unknown');
    return { kind: 'unknown', mode: 'unknown', loaded: [] };
  }

  private async fetchLoaded(spec: BackendSpec, kind: ResidencyKind, dispatcher: Dispatcher): Promise<string[]> {
    const reader = READERS[kind]!;
    const res = await request(`${new URL(spec.url).origin}${basePath(spec.url)}${reader.path}`, {
      method: 'GET',
      dispatcher,
      headers: { accept: 'application/json', ...credentialHeaders(spec) },
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new NotThisKind(`GET ${reader.path} answered ${res.statusCode}`);
    try {
      return reader.parse(JSON.parse(text));
    } catch (err) {
      throw new NotThisKind(`GET ${reader.path}: ${(err as Error).message}`);
    }
  }
}

/**
 * The kind a model list names, undefined when it names none; an Ollama backend is one; paid
 * boxes and kinds that hold no models are unknown.
 */
function ownerKind(spec: BackendSpec, models: ModelInfo[]): ResidencyKind | undefined {
  const read = kindOf(spec).residency;
  if (read === 'none' || spec.paid) return 'unknown';
  if (read === 'ollama') return 'ollama';
  for (const m of models) {
    const kind = m.owned_by && OWNER_KINDS[m.owned_by];
    if (kind) return kind;
  }
  return undefined;
}
