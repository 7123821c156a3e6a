import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { filterAllowed, isListedModelVisible } from '../auth/allow.ts';
import { badRequest, GatewayError, modelNotFound } from '../errors.ts';
import type { ModelCatalogView } from '../routing/catalog.ts';
import type { CallOutcome } from '../upstream/outcome.ts';
import type { ProxyCall } from '../upstream/proxy.ts';
import { OpenAISurface, type OpenAIEndpoint } from '../upstream/openai-surface.ts';
import { useRawJsonBodies } from './json-body.ts';
import type { CallerContext, Callers } from './caller.ts';

export interface OpenAIRoutesOptions {
  callers: Callers;
  catalog: ModelCatalogView;
  /** Runs a call through the scheduler and the backends and answers the client. */
  proxy: { handle(call: ProxyCall): Promise<void> };
  /** Records a call the route refused (the proxy reports the calls it answered itself). */
  recordOutcome: (outcome: CallOutcome) => void;
}

/** Body limit for JSON chat-style calls (ARCHITECTURE §3). */
export const JSON_BODY_LIMIT = 32 * 1024 * 1024;

/**
 * The OpenAI-compatible surface: model listing from memory (filtered by the caller's
 * allow-list), and the three proxied calls. Thin: authenticate, resolve, gate, hand to the proxy.
 */
export async function openaiRoutes(app: FastifyInstance, opts: OpenAIRoutesOptions): Promise<void> {
  const { callers, catalog } = opts;
  useRawJsonBodies(app, JSON_BODY_LIMIT);

  const visibleModels = (ctx: CallerContext) => {
    const entries = catalog.listing('openai');
    const allow = ctx.caller.allow;
    if (!allow.length) return entries;
    return entries.filter((e) => isListedModelVisible(allow, e));
  };

  app.get('/v1/models', async (req) => {
    const ctx = callers.identify(req);
    return { object: 'list', data: visibleModels(ctx).map((e) => e.model) };
  });

  app.get('/v1/models/*', async (req) => {
    const ctx = callers.identify(req);
    const id = (req.params as { '*': string })['*']; // fastify has decoded it already
    const entry = visibleModels(ctx).find((e) => e.model.id === id);
    if (!entry) throw modelNotFound(id);
    return entry.model;
  });

  const proxied = (endpoint: OpenAIEndpoint, path: string) => async (req: FastifyRequest, reply: FastifyReply) => {
    const startedAt = Date.now();
    let ctx: CallerContext | undefined;
    let requested: string | null = null;
    try {
      ctx = callers.identify(req);
      const body = req.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        throw badRequest('The request body must be a JSON object.');
      }
      const model = (body as { model?: unknown }).model;
      if (model === undefined || model === null) throw badRequest('You must provide a model parameter.', 'model', 'missing_model');
      if (typeof model !== 'string' || model === '') throw badRequest('`model` must be a non-empty string.', 'model', 'invalid_model');
      requested = model;
      const allow = ctx.caller.allow;
      const candidatesNow = () => {
        const resolved = catalog.resolve(model, 'openai');
        // a model outside the allow-list looks exactly like an unknown one
        return resolved ? { requested: resolved.requested, alias: resolved.alias, candidates: filterAllowed(allow, resolved) } : undefined;
      };
      const resolution = candidatesNow();
      if (!resolution?.candidates.length) throw modelNotFound(model);
      const done = callers.admit(ctx);
      try {
        const query = req.url.indexOf('?');
        const surface = new OpenAISurface({
          endpoint, path, query: query === -1 ? '' : req.url.slice(query), body: body as Record<string, unknown>, rawBody: req.rawBody,
        });
        await opts.proxy.handle({
          surface, resolution,
          req, reply, caller: { source: ctx.source, userId: ctx.userId },
          refreshCandidates: () => candidatesNow()?.candidates ?? [],
        });
      } finally {
        done(); // only after the call's row is queued, so it is never left uncounted
      }
      return reply;
    } catch (err) {
      if (err instanceof GatewayError && !reply.sent && !reply.raw.headersSent) {
        const who = ctx ?? callers.anonymous(req);
        opts.recordOutcome({
          requestId: String(req.id), endpoint, requestedModel: requested, backend: null, model: null,
          status: err.status, reason: err.reason, startedAt, durationMs: Date.now() - startedAt, ttftMs: null,
          source: who.source, userId: who.userId,
        });
      }
      throw err;
    }
  };

  const post = { bodyLimit: JSON_BODY_LIMIT };
  for (const [endpoint, path] of [['chat', '/v1/chat/completions'], ['completions', '/v1/completions'], ['embeddings', '/v1/embeddings']] as const) {
    app.post(path, post, proxied(endpoint, path));
  }
}
