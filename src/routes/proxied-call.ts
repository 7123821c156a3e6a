/**
 * The one shape of a proxied call, whatever its surface: identify the caller, read the body's
 * `model`, let the route resolve and gate it, admit it within the caller's quota, hand it to
 * the proxy; a call refused before anything was sent is recorded here and rethrown for the
 * error handler, which renders it in the surface's shape. Every outcome of the call, the
 * proxy's and the route's, is settled once here (stats/outcome-once.ts): one row per call,
 * whatever path it took, and a row also for a call that ended without saying how.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { badRequest, GatewayError } from '../errors.ts';
import { conversationKey, sessionIdOf } from '../routing/conversation-affinity.ts';
import { conversationSeed, seedSurfaceOf } from '../routing/conversation-seed.ts';
import { OutcomeOnce } from '../stats/outcome-once.ts';
import { STATUS_CLIENT_CLOSED } from '../stats/record.ts';
import type { CallOutcome } from '../stats/call-outcome.ts';
import { promptTokenEstimate } from '../surfaces/prompt-estimate.ts';
import type { ProxyCall } from '../upstream/proxy-call.ts';
import type { CallerContext, Callers } from './caller.ts';
import { ticketUserOf } from './ticket-user.ts';

export interface ProxiedCallDeps {
  callers: Callers;
  proxy: { handle(call: ProxyCall): Promise<void> };
  /** Records the call's outcome, once: the route's refusal or what the proxy reports. */
  recordOutcome: (outcome: CallOutcome) => void;
}

/**
 * The route's part: the call for this body and model (and what to do once it was answered), or
 * a thrown GatewayError. `history`: the stored earlier items a Responses call is sent with, which
 * count in its prompt size and conversation seed. Or `answeredHere`: a call the gateway answers
 * itself, with no backend, no slot and no quota (Ollama's load-only request), on record all the same.
 */
export type PrepareCall = (
  ctx: CallerContext,
  body: Record<string, unknown>,
  model: string,
) => PreparedCall | AnsweredHere | Promise<PreparedCall | AnsweredHere>;

type PreparedCall = Omit<ProxyCall, 'req' | 'reply' | 'caller' | 'promptTokens' | 'conversationKey'> & {
  answered?: () => void;
  history?: readonly unknown[];
};

/** The answer the route gives at once, and the call log's reason for it. */
export interface AnsweredHere {
  answeredHere: { body: object; reason: string };
}

export async function runProxiedCall(
  deps: ProxiedCallDeps,
  endpoint: string,
  req: FastifyRequest,
  reply: FastifyReply,
  prepare: PrepareCall,
): Promise<FastifyReply> {
  const startedAt = Date.now();
  // every outcome of this call goes through here: the first is its row, a second one is a bug to hear about
  const outcome = new OutcomeOnce(deps.recordOutcome, (first, again) =>
    req.log.warn(
      { reqId: first.requestId, first: `${first.status} ${first.reason}`, again: `${again.status} ${again.reason}` },
      'a call reported a second outcome; the first stands',
    ),
  );
  let ctx: CallerContext | undefined;
  let requested: string | null = null;
  let dispatched = false;
  const record = (status: number, reason: string | null) => {
    const who = ctx ?? deps.callers.anonymous(req);
    outcome.settle({
      requestId: String(req.id),
      endpoint,
      requestedModel: requested,
      backend: null,
      model: null,
      status,
      reason,
      startedAt,
      durationMs: Date.now() - startedAt,
      ttftMs: null,
      source: who.source,
      userId: who.userId,
    });
  };
  try {
    ctx = deps.callers.identify(req);
    const body = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest('The request body must be a JSON object.');
    }
    const model = (body as { model?: unknown }).model;
    if (model === undefined || model === null)
      throw badRequest('You must provide a model parameter.', 'model', 'missing_model');
    if (typeof model !== 'string' || model === '')
      throw badRequest('`model` must be a non-empty string.', 'model', 'invalid_model');
    requested = model;
    const fields = body as Record<string, unknown>;
    const call = await prepare(ctx, fields, model);
    if ('answeredHere' in call) {
      record(200, call.answeredHere.reason);
      return reply.send(call.answeredHere.body);
    }
    const ticketUser = ticketUserOf(ctx.caller);
    const surface = seedSurfaceOf(endpoint);
    const done = await deps.callers.admit(ctx, { hasUnpaid: deps.callers.hasUnpaid(call.resolution.candidates) });
    try {
      dispatched = true;
      // written out, not spread (the hot path's rule)
      await deps.proxy.handle({
        surface: call.surface,
        resolution: call.resolution,
        refreshCandidates: call.refreshCandidates,
        parkSeconds: call.parkSeconds,
        req,
        reply,
        caller: { source: ctx.source, userId: ctx.userId, ticketUser, paidAllowed: deps.callers.paidAllowed(ctx) },
        promptTokens: promptTokenEstimate(endpoint, fields, call.history),
        conversationKey:
          surface &&
          (() =>
            conversationKey({
              sessionId: sessionIdOf(req.headers['x-session-id']),
              user: ticketUser.key,
              model,
              seed: () => conversationSeed(surface, fields, call.history),
            })),
        report: (o) => outcome.settle(o),
      });
      if (!outcome.settled) {
        req.log.warn({ reqId: req.id }, 'a call ended without reporting its outcome');
        record(...unreported(reply));
      }
      call.answered?.();
    } finally {
      done(); // only after the call's row is queued, so it is never left uncounted
    }
    return reply;
  } catch (err) {
    if (outcome.settled) throw err; // the call ended and is on record; what broke after is the error handler's
    // refused before anything was sent: on record here, rendered by the error handler
    if (err instanceof GatewayError && !reply.sent && !reply.raw.headersSent) record(err.status, err.reason);
    // the proxy let the call go without an outcome: on record all the same (a background start is no call)
    else if (dispatched) record(...unreported(reply, err));
    throw err;
  }
}

/** What a call that ended without reporting its outcome is logged as (a bug's trace: never a missing row). */
function unreported(reply: FastifyReply, err?: unknown): [number, string] {
  if (reply.raw.destroyed && !reply.raw.writableFinished) return [STATUS_CLIENT_CLOSED, 'client_closed'];
  if (err instanceof GatewayError) return [err.status, err.reason ?? 'unreported'];
  return err === undefined ? [reply.raw.statusCode, 'unreported'] : [500, 'internal_error'];
}

/** The client's query string with its `?`, or ''. */
export function queryOf(url: string): string {
  const at = url.indexOf('?');
  return at === -1 ? '' : url.slice(at);
}
