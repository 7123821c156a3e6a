/**
 * Ollama's native API on the gateway, so Ollama-only clients (Open WebUI's Ollama connection,
 * Home Assistant, Continue, Enchanted, the `ollama` libraries) reach the whole fleet:
 * `POST /api/chat`, `/api/generate`, `/api/embed`, `/api/embeddings` (proxied like every call:
 * auth, model gate, quota, scheduler, parking, failover, call log), `GET /api/tags`,
 * `POST /api/show`, `GET /api/ps`, `GET /api/version`, and `GET`/`HEAD /` ("Ollama is running",
 * which Claude Code's probe of the base URL takes as well). Model management (`pull`, `push`,
 * `create`, `copy`, `delete`) is refused in so many words: the gateway serves the fleet's
 * models, it does not manage them. Errors on `/api/*` are Ollama's `{"error": "…"}`
 * (routes/error-handler.ts); a JSON, form or text body is read as JSON, as Ollama reads any
 * body (`curl -d` sends a form type).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BackendType } from '../config/types.ts';
import { badRequest, GatewayError } from '../errors.ts';
import { isObject } from '../json.ts';
import { loadOnly } from '../bridges/ollama/request.ts';
import type { ModelCatalogView } from '../routing/catalog.ts';
import { OllamaSurface, speaksOllamaNatively, type OllamaEndpoint } from '../surfaces/ollama-surface.ts';
import type { CallerContext } from './caller.ts';
import { useRawJsonBodies } from './json-body.ts';
import { gateOpenAIModel, type GatedModel } from './model-gate.ts';
import { JSON_BODY_LIMIT, type TransformSource } from './openai.ts';
import { OLLAMA_API_VERSION, runningOf, showOf, tagOf, visibleModels, type ModelFacts } from './ollama-models.ts';
import { runProxiedCall, type ProxiedCallDeps } from './proxied-call.ts';

export interface OllamaRoutesOptions extends ProxiedCallDeps {
  catalog: ModelCatalogView;
  transforms: TransformSource;
  /** A backend's kind by name (undefined once it is gone). */
  backendType: (name: string) => BackendType | undefined;
  facts: ModelFacts;
  /** The Ollama server's own `/api/show` of a model it serves (undefined: not one, or no answer). */
  nativeShow: (backend: string, model: string, verbose: boolean) => Promise<Record<string, unknown> | undefined>;
  /** The proxy's clock (epoch milliseconds): a call's arrival is measured on it, like its first token and end. */
  now: () => number;
}

/** Model management the gateway leaves to each server. */
const MANAGEMENT = ['pull', 'push', 'create', 'copy', 'delete'] as const;

export async function ollamaRoutes(app: FastifyInstance, opts: OllamaRoutesOptions): Promise<void> {
  const { catalog, callers } = opts;
  // Ollama reads any body as JSON, whatever its type (`curl -d` sends a form type, `fetch` with
  // a string text/plain); a cross-site page still cannot post to an open gateway
  // (auth/open-guard.ts) nor carry a key to a locked one
  useRawJsonBodies(app, JSON_BODY_LIMIT, ['application/x-www-form-urlencoded', 'text/plain']);

  const isNative = (backend: string) => {
    const type = opts.backendType(backend);
    return type !== undefined && speaksOllamaNatively({ type });
  };

  const running = async () => 'Ollama is running';
  app.get('/', running);
  app.get('/api/version', async () => ({ version: OLLAMA_API_VERSION }));

  app.get('/api/tags', async (req) => ({ models: visibleModels(catalog, callers.identify(req)).map(tagOf) }));

  app.get('/api/ps', async (req) => {
    const now = Date.now();
    const models = visibleModels(catalog, callers.identify(req)).flatMap((e) => runningOf(e, opts.facts, now) ?? []);
    return { models };
  });

  app.post('/api/show', { bodyLimit: JSON_BODY_LIMIT }, async (req) => {
    const ctx = callers.identify(req);
    const model = shownModel(req.body);
    const { candidates } = gate(catalog, model, ctx).resolution;
    // an Ollama server among the candidates knows the model best
    const verbose = (req.body as { verbose?: unknown }).verbose === true;
    for (const c of candidates) {
      const native = isNative(c.backend) ? await opts.nativeShow(c.backend, c.model, verbose) : undefined;
      if (native) return native;
    }
    // else what the gateway knows; an id the listing does not name (a glob alias) by its candidates
    const entry = visibleModels(catalog, ctx).find((e) => e.model.id === model);
    const unlisted = {
      model: { id: model, object: 'model' as const, created: 0, owned_by: '' },
      alias: true,
      candidates,
    };
    return showOf(entry ?? unlisted, opts.facts);
  });

  for (const name of MANAGEMENT) {
    const refuse = async () => {
      throw new GatewayError({
        status: 403,
        code: 'models_not_managed',
        message:
          `this gateway does not manage models: /api/${name} is for an Ollama server itself; ` +
          'GET /api/tags lists the models the gateway serves',
      });
    };
    if (name === 'delete') app.delete('/api/delete', refuse);
    app.post(`/api/${name}`, refuse);
  }

  const proxied = (endpoint: OllamaEndpoint) => (req: FastifyRequest, reply: FastifyReply) =>
    runProxiedCall(opts, `ollama-${endpoint}`, req, reply, (ctx, body, model) => {
      const gated = gate(catalog, model, ctx);
      const loading =
        endpoint === 'chat' || endpoint === 'generate' ? loadOnlyAnswer(endpoint, body, model) : undefined;
      if (loading) return loading;
      const alias = gated.resolution.alias;
      const surface = new OllamaSurface({
        endpoint,
        body,
        rawBody: req.rawBody,
        requested: model,
        startedAt: opts.now(),
        now: opts.now,
        transformFor: (want) =>
          opts.transforms.forCall('chat', alias, { want, saidAuto: false, stripGatewayField: false }),
      });
      const { resolution, refreshCandidates } = gated;
      if (resolution.candidates.every((c) => isNative(c.backend))) return { surface, resolution, refreshCandidates };
      const problem = surface.translationProblem();
      if (!problem) return { surface, resolution, refreshCandidates };
      // only an Ollama server can take this request as it is
      const native = resolution.candidates.filter((c) => isNative(c.backend));
      if (!native.length) throw badRequest(problem.message, problem.param);
      return {
        surface,
        resolution: { ...resolution, candidates: native },
        refreshCandidates: () => refreshCandidates().filter((c) => isNative(c.backend)),
      };
    });

  const post = { bodyLimit: JSON_BODY_LIMIT };
  for (const endpoint of ['chat', 'generate', 'embed', 'embeddings'] as const) {
    app.post(`/api/${endpoint}`, post, proxied(endpoint));
  }
}

/**
 * A request that only loads or unloads its model (after the model gate): answered at once, as
 * Ollama does, with no backend asked and no slot taken; the call log has its row all the same.
 */
function loadOnlyAnswer(endpoint: 'chat' | 'generate', body: Record<string, unknown>, model: string) {
  const reason = loadOnly(endpoint, body);
  if (!reason) return undefined;
  const answer = { model, created_at: new Date().toISOString() };
  const said = endpoint === 'chat' ? { message: { role: 'assistant', content: '' } } : { response: '' };
  return { answeredHere: { body: { ...answer, ...said, done: true, done_reason: reason }, reason: 'load_only' } };
}

/** The caller may use `model` on `/api/*`, else a 404 in Ollama's words (unknown and forbidden alike). */
function gate(catalog: ModelCatalogView, model: string, ctx: CallerContext): GatedModel {
  try {
    return gateOpenAIModel(catalog, model, ctx.caller.allow);
  } catch (err) {
    if (!(err instanceof GatewayError) || err.reason !== 'unknown_model') throw err;
    throw new GatewayError({
      status: 404,
      code: 'model_not_found',
      reason: 'unknown_model',
      param: 'model',
      message: `model "${model}" not found: this gateway does not pull models; GET /api/tags lists the ones it serves`,
    });
  }
}

/** `/api/show`'s `model` (or the older `name`), or Ollama's 400. */
function shownModel(body: unknown): string {
  if (!isObject(body)) throw badRequest('missing request body');
  const model = body.model ?? body.name;
  if (typeof model !== 'string' || model === '') throw badRequest('model is required', 'model');
  return model;
}
