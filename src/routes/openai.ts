import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { badRequest, modelNotFound } from '../errors.ts';
import type { Gateway } from '../gateway.ts';
import { resolveModel } from '../routing/resolve.ts';
import type { Endpoint } from '../upstream/proxy.ts';

export interface OpenAIRoutesOptions {
  gateway: Gateway;
}

/** Body limit for JSON chat-style calls (ARCHITECTURE §3). */
export const JSON_BODY_LIMIT = 32 * 1024 * 1024;

/**
 * The OpenAI-compatible surface: model listing from memory, and the three proxied calls.
 * Thin: parse, resolve, hand to the proxy.
 */
export async function openaiRoutes(app: FastifyInstance, opts: OpenAIRoutesOptions): Promise<void> {
  const { gateway } = opts;

  app.get('/v1/models', async () => ({
    object: 'list',
    data: gateway.modelListing().map((e) => e.model),
  }));

  app.get('/v1/models/*', async (req) => {
    const id = decodeURIComponent((req.params as { '*': string })['*']);
    const entry = gateway.modelListing().find((e) => e.model.id === id);
    if (!entry) throw modelNotFound(id);
    return entry.model;
  });

  const proxied = (endpoint: Endpoint) => async (req: FastifyRequest, reply: FastifyReply) => {
    const body = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest('The request body must be a JSON object.');
    }
    const model = (body as { model?: unknown }).model;
    if (typeof model !== 'string' || model === '') throw modelNotFound(undefined);
    const resolution = resolveModel(model, gateway.registry, gateway.config().virtual_models, 'openai');
    if (!resolution) throw modelNotFound(model);
    await gateway.proxy.handle({ endpoint, body: body as Record<string, unknown>, resolution, req, reply });
    return reply;
  };

  const post = { bodyLimit: JSON_BODY_LIMIT };
  app.post('/v1/chat/completions', post, proxied('chat'));
  app.post('/v1/completions', post, proxied('completions'));
  app.post('/v1/embeddings', post, proxied('embeddings'));
}
