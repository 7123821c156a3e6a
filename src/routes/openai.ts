import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { visibleEntries } from '../auth/allow.ts';
import { badRequest, modelNotFound } from '../errors.ts';
import type { ModelCatalogView } from '../routing/catalog.ts';
import type { ListingEntry } from '../routing/model-listing.ts';
import { OpenAISurface, type OpenAIEndpoint } from '../surfaces/openai-surface.ts';
import type { BodyTransform } from '../surfaces/body-transform.ts';
import { switchRequest, type SwitchRequest } from '../surfaces/call-transform.ts';
import { useRawJsonBodies } from './json-body.ts';
import type { CallerContext } from './caller.ts';
import { anthropicModel, anthropicModelPage, wantsAnthropicShape } from './anthropic-models.ts';
import { gateOpenAIModel } from './model-gate.ts';
import { queryOf, runProxiedCall, type ProxiedCallDeps } from './proxied-call.ts';

export interface OpenAIRoutesOptions extends ProxiedCallDeps {
  catalog: ModelCatalogView;
  /** The reasoning switch and sampling defaults of a chat-shaped call. */
  transforms: TransformSource;
  /** The generation aliases (ComfyUI) this request's caller may use, as model objects; absent = none. */
  imageModels?: (req: FastifyRequest, ctx: CallerContext) => ImageModel[];
}

/** A generation alias in `/v1/models`. */
export interface ImageModel {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  type: 'image';
  backends?: string[];
}

export interface TransformSource {
  forCall(kind: 'chat' | 'completions', alias: string | undefined, request: SwitchRequest): BodyTransform;
}

/** Body limit for JSON chat-style calls (ARCHITECTURE §3). */
export const JSON_BODY_LIMIT = 32 * 1024 * 1024;

/**
 * The OpenAI-compatible surface: model listing from memory (filtered by the caller's
 * allow-list), and the three proxied calls. Thin: authenticate, resolve, gate, hand to the proxy.
 * `/v1/models` lists what the caller may use on any endpoint: ids only POST /v1/messages can
 * reach (anthropic backends) are marked with `endpoints`; an Anthropic SDK (it sends
 * `anthropic-version`) gets Anthropic's list shape. Generation aliases (image, video, audio
 * workflows) come after the chat models, marked `type: 'image'`; `?type=image` lists only
 * them, `?type=chat` only the rest (Anthropic's shape never lists them).
 */
export async function openaiRoutes(app: FastifyInstance, opts: OpenAIRoutesOptions): Promise<void> {
  const { callers, catalog } = opts;
  useRawJsonBodies(app, JSON_BODY_LIMIT);

  const visibleModels = (ctx: CallerContext): ListingEntry[] =>
    visibleEntries(ctx.caller.allow, catalog.listing('messages'));

  app.get('/v1/models', async (req) => {
    const ctx = callers.identify(req);
    const type = listingType((req.query as Record<string, unknown>).type);
    if (wantsAnthropicShape(req))
      return anthropicModelPage(type === 'image' ? [] : visibleModels(ctx), req.query as Record<string, unknown>);
    const chat = type === 'image' ? [] : visibleModels(ctx).map((e) => e.model);
    const images = type === 'chat' ? [] : (opts.imageModels?.(req, ctx) ?? []);
    return { object: 'list', data: [...chat, ...images] };
  });

  app.get('/v1/models/*', async (req) => {
    const ctx = callers.identify(req);
    const id = (req.params as { '*': string })['*']; // fastify has decoded it already
    const entry = visibleModels(ctx).find((e) => e.model.id === id);
    if (entry) return wantsAnthropicShape(req) ? anthropicModel(entry) : entry.model;
    const image = wantsAnthropicShape(req) ? undefined : opts.imageModels?.(req, ctx).find((m) => m.id === id);
    if (!image) throw modelNotFound(id);
    return image;
  });

  const proxied = (endpoint: OpenAIEndpoint, path: string) => (req: FastifyRequest, reply: FastifyReply) =>
    runProxiedCall(opts, endpoint, req, reply, (ctx, body, model) => {
      const gated = gateOpenAIModel(catalog, model, ctx.caller.allow);
      const transform =
        endpoint === 'embeddings'
          ? undefined
          : opts.transforms.forCall(
              endpoint === 'chat' ? 'chat' : 'completions',
              gated.resolution.alias,
              switchRequest(body, endpoint === 'chat' ? 'chat' : 'completions'),
            );
      return {
        surface: new OpenAISurface({ endpoint, path, query: queryOf(req.url), body, rawBody: req.rawBody, transform }),
        resolution: gated.resolution,
        refreshCandidates: gated.refreshCandidates,
      };
    });

  const post = { bodyLimit: JSON_BODY_LIMIT };
  for (const [endpoint, path] of [
    ['chat', '/v1/chat/completions'],
    ['completions', '/v1/completions'],
    ['embeddings', '/v1/embeddings'],
  ] as const) {
    app.post(path, post, proxied(endpoint, path));
  }
}

/** `/v1/models?type=`: `image` (generation aliases), `chat` (everything else), absent: both. */
function listingType(value: unknown): 'image' | 'chat' | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === 'image' || value === 'chat') return value;
  throw badRequest("`type` must be 'image' or 'chat'.", 'type', 'invalid_type');
}
