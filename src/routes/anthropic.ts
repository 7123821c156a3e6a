/**
 * The Anthropic Messages frontdoor: `POST /v1/messages` (Claude Code posts `?beta=true`; the
 * query goes upstream as it came) and `POST /v1/messages/count_tokens`. (`GET`/`HEAD /`, which
 * Claude Code probes before anything else, is answered by routes/ollama.ts: any 200 will do.)
 * Same auth (`x-api-key` or Bearer), model gate, quotas, scheduler and call log as the OpenAI
 * routes; errors in Anthropic's shape, and 401/403/404 with `x-should-retry: false` so the CLI
 * fails at once instead of retrying a bad key for minutes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { filterAllowed } from '../auth/allow.ts';
import { descriptorFor, speaks } from '../backends/kinds/index.ts';
import type { BackendType } from '../config/types.ts';
import { GatewayError, modelNotFound } from '../errors.ts';
import type { ModelCatalogView } from '../routing/catalog.ts';
import type { Resolution } from '../routing/resolve.ts';
import type { TokenCount } from '../surfaces/count-tokens.ts';
import { clientResponseHeaders } from '../upstream/headers.ts';
import { MessagesSurface, type MessagesCall } from '../surfaces/messages-surface.ts';
import type { Candidate } from '../scheduler/types.ts';
import type { CallerContext } from './caller.ts';
import { translationRefusal } from './anthropic-refusal.ts';
import { useRawJsonBodies } from './json-body.ts';
import { JSON_BODY_LIMIT, type TransformSource } from './openai.ts';
import { queryOf, runProxiedCall, type ProxiedCallDeps } from './proxied-call.ts';

export interface AnthropicRoutesOptions extends ProxiedCallDeps {
  catalog: ModelCatalogView;
  transforms: TransformSource;
  /** A backend's kind by name (undefined once it is gone). */
  backendType: (name: string) => BackendType | undefined;
  /** The candidates on backends the scheduler can route to now (available ones). */
  routable: (candidates: Candidate[]) => Candidate[];
  /** Counts a request's input tokens without a scheduler slot. */
  countTokens: (call: MessagesCall, candidates: readonly Candidate[], req: FastifyRequest) => Promise<TokenCount>;
}

const NO_RETRY = new Set([401, 403, 404]);

export async function anthropicRoutes(app: FastifyInstance, opts: AnthropicRoutesOptions): Promise<void> {
  const { catalog, callers } = opts;
  useRawJsonBodies(app, JSON_BODY_LIMIT);
  app.addHook('onSend', async (req, reply) => {
    if (NO_RETRY.has(reply.statusCode) && !reply.hasHeader('x-should-retry') && req.url.startsWith('/v1/messages')) {
      reply.header('x-should-retry', 'false');
    }
  });

  /** The call's candidates under the caller's allow-list; translating backends only if the body translates. */
  const resolveFor = (ctx: CallerContext, model: string, translates: () => boolean) => (): Resolution | undefined => {
    const resolved = catalog.resolve(model, 'messages');
    if (!resolved) return undefined;
    const allowed = filterAllowed(ctx.caller.allow, resolved);
    // a backend gets the client's Messages request as sent, or a chat call translated from it
    const native = (c: Candidate) => speaksMessages(opts.backendType(c.backend));
    const candidates = allowed.some((c) => !native(c)) && !translates() ? allowed.filter(native) : allowed;
    return { requested: resolved.requested, alias: resolved.alias, candidates };
  };

  app.post('/v1/messages', { bodyLimit: JSON_BODY_LIMIT }, (req: FastifyRequest, reply: FastifyReply) =>
    runProxiedCall(opts, 'messages', req, reply, (ctx, body, model) => {
      const alias = catalog.resolve(model, 'messages')?.alias;
      const surface = new MessagesSurface({
        query: queryOf(req.url),
        body,
        rawBody: req.rawBody,
        requested: model,
        transformFor: (want) =>
          opts.transforms.forCall('chat', alias, { want, saidAuto: false, stripGatewayField: false }),
      });
      const problem = () => surface.translationProblem();
      const candidatesNow = resolveFor(ctx, model, () => !problem());
      const resolution = candidatesNow();
      if (!resolution) throw modelNotFound(model);
      if (!resolution.candidates.length) {
        const p = problem();
        // only chat backends serve it, and this request cannot be made into a chat call
        if (p && filterAllowed(ctx.caller.allow, catalog.resolve(model, 'messages')!).length) {
          throw translationRefusal(p);
        }
        throw modelNotFound(model);
      }
      // kept for its anthropic backends, all down now: refused as a chat backend refuses it, when the
      // SDK recovers from that (a thread: resent without it, which the chat backends then serve)
      if (
        !opts.routable(resolution.candidates).length &&
        resolution.candidates.length < filterAllowed(ctx.caller.allow, catalog.resolve(model, 'messages')!).length
      ) {
        const p = problem();
        if (p?.errorCode) throw translationRefusal(p);
      }
      return { surface, resolution, refreshCandidates: () => candidatesNow()?.candidates ?? [] };
    }),
  );

  app.post('/v1/messages/count_tokens', { bodyLimit: JSON_BODY_LIMIT }, async (req, reply) => {
    const ctx = callers.identify(req);
    const body = req.body as Record<string, unknown> | null;
    const model = body && typeof body === 'object' && !Array.isArray(body) ? body.model : undefined;
    if (typeof model !== 'string' || model === '') {
      throw new GatewayError({
        status: 400,
        code: 'invalid_request',
        param: 'model',
        message: 'model: Field required',
      });
    }
    const resolved = catalog.resolve(model, 'messages');
    const candidates = resolved ? filterAllowed(ctx.caller.allow, resolved) : [];
    if (!candidates.length) throw modelNotFound(model);
    const call = { query: queryOf(req.url), body: body!, rawBody: req.rawBody, requested: model };
    const counted = await opts.countTokens(call, candidates, req);
    if (counted.backend) reply.header('x-gateway-backend', counted.backend);
    reply.header('x-request-id', req.id);
    if (counted.kind === 'estimated') return { input_tokens: counted.inputTokens };
    return reply.code(counted.status).headers(clientResponseHeaders(counted.headers)).send(counted.body);
  });
}

/** Whether a backend of this kind gets the client's Messages request as sent (a gone one does not). */
function speaksMessages(type: BackendType | undefined): boolean {
  return type !== undefined && speaks(descriptorFor(type), 'messages');
}
