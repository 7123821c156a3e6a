/**
 * The one shape of a proxied call, whatever its surface: identify the caller, read the body's
 * `model`, let the route resolve and gate it, admit it within the caller's quota, hand it to
 * the proxy; a call refused before anything was sent is recorded here and rethrown for the
 * error handler, which renders it in the surface's shape.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { badRequest, GatewayError } from '../errors.ts';
import type { CallOutcome } from '../upstream/outcome.ts';
import type { ProxyCall } from '../upstream/proxy.ts';
import type { CallerContext, Callers } from './caller.ts';

export interface ProxiedCallDeps {
  callers: Callers;
  proxy: { handle(call: ProxyCall): Promise<void> };
  /** Records a call the route refused (the proxy reports the calls it answered itself). */
  recordOutcome: (outcome: CallOutcome) => void;
}

/** The route's part: the call for this body and model (and what to do once it was answered), or a thrown GatewayError. */
export type PrepareCall = (ctx: CallerContext, body: Record<string, unknown>, model: string) =>
  Omit<ProxyCall, 'req' | 'reply' | 'caller'> & { answered?: () => void };

export async function runProxiedCall(
  deps: ProxiedCallDeps, endpoint: string, req: FastifyRequest, reply: FastifyReply, prepare: PrepareCall,
): Promise<FastifyReply> {
  const startedAt = Date.now();
  let ctx: CallerContext | undefined;
  let requested: string | null = null;
  try {
    ctx = deps.callers.identify(req);
    const body = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest('The request body must be a JSON object.');
    }
    const model = (body as { model?: unknown }).model;
    if (model === undefined || model === null) throw badRequest('You must provide a model parameter.', 'model', 'missing_model');
    if (typeof model !== 'string' || model === '') throw badRequest('`model` must be a non-empty string.', 'model', 'invalid_model');
    requested = model;
    const call = prepare(ctx, body as Record<string, unknown>, model);
    const done = deps.callers.admit(ctx);
    try {
      // written out, not spread (the hot path's rule)
      await deps.proxy.handle({
        surface: call.surface, resolution: call.resolution, refreshCandidates: call.refreshCandidates, parkSeconds: call.parkSeconds,
        req, reply, caller: { source: ctx.source, userId: ctx.userId },
      });
      call.answered?.();
    } finally {
      done(); // only after the call's row is queued, so it is never left uncounted
    }
    return reply;
  } catch (err) {
    if (err instanceof GatewayError && !reply.sent && !reply.raw.headersSent) {
      const who = ctx ?? deps.callers.anonymous(req);
      deps.recordOutcome({
        requestId: String(req.id), endpoint, requestedModel: requested, backend: null, model: null,
        status: err.status, reason: err.reason, startedAt, durationMs: Date.now() - startedAt, ttftMs: null,
        source: who.source, userId: who.userId,
      });
    }
    throw err;
  }
}

/** The client's query string with its `?`, or ''. */
export function queryOf(url: string): string {
  const at = url.indexOf('?');
  return at === -1 ? '' : url.slice(at);
}
