/**
 * The app-wide onRequest checks, run before routing's hooks and before any body is read:
 *
 * 1. the receive timeout (receive-timeout.ts) for a request whose body is still coming;
 * 2. while the gateway is open, the Host and Origin rules of auth/open-guard.ts (the console
 *    and the admin API apply their own, stricter, form);
 * 3. while it is locked, the key of a request with a body to an API route (`/v1/*`, Ollama's `/api/*`): a wrong
 *    or missing key is refused (401, on record like any refused call) before the gateway reads
 *    up to 96 MiB of body for nothing. The route checks the key again as it always did.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { openGatewayRefusal, type OpenGuardSettings } from '../auth/open-guard.ts';
import type { OwnHost } from '../auth/own-host.ts';
import { GatewayError } from '../errors.ts';
import type { CallOutcome } from '../stats/call-outcome.ts';
import type { Attribution } from './caller.ts';
import { renderErrorBody } from './error-handler.ts';
import { watchRequestReceipt } from './receive-timeout.ts';

export interface RequestGuardDeps {
  isOpen: () => boolean;
  own: OwnHost;
  settings: () => OpenGuardSettings & { receiveIdleMs: number };
  /** Throws the 401 GatewayError for a missing or wrong key (nothing while open). */
  authenticate: (headers: FastifyRequest['headers']) => unknown;
  anonymous: (req: FastifyRequest) => Attribution;
  recordOutcome: (outcome: CallOutcome) => void;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

export function requestGuards(deps: RequestGuardDeps) {
  return function guard(req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void {
    const settings = deps.settings();
    watchRequestReceipt(req, reply, settings.receiveIdleMs, (err) =>
      JSON.stringify(renderErrorBody(err, req.url, req.headers)),
    );
    if (deps.isOpen()) {
      done(judgedByItsOwnRule(req.url) ? undefined : openGatewayRefusal(req, deps.own, settings));
      return;
    }
    if (!carriesApiBody(req)) {
      done();
      return;
    }
    const startedAt = Date.now();
    try {
      deps.authenticate(req.headers);
    } catch (err) {
      if (err instanceof GatewayError) recordRefusal(deps, req, err, startedAt);
      done(err as Error);
      return;
    }
    done();
  };
}

/**
 * The console and the admin API apply a stricter form of the open gateway's rule themselves
 * (auth/loopback.ts: loopback names only, no foreign Origin), with their own answers (the
 * console's login page says why it will not open).
 */
function judgedByItsOwnRule(url: string): boolean {
  return url === '/ui' || url.startsWith('/ui/') || url.startsWith('/ui?') || url.startsWith('/admin/');
}

/** A POST/PUT/PATCH to an API route with a body (a length above 0, or chunked). */
function carriesApiBody(req: FastifyRequest): boolean {
  const route = req.routeOptions.url;
  if (!BODY_METHODS.has(req.method) || !(route?.startsWith('/v1/') || route?.startsWith('/api/'))) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function recordRefusal(deps: RequestGuardDeps, req: FastifyRequest, err: GatewayError, startedAt: number): void {
  const who = deps.anonymous(req);
  deps.recordOutcome({
    requestId: String(req.id),
    endpoint: req.routeOptions.url ?? req.url.split('?')[0],
    requestedModel: null,
    backend: null,
    model: null,
    status: err.status,
    reason: err.reason,
    startedAt,
    durationMs: Date.now() - startedAt,
    ttftMs: null,
    source: who.source,
    userId: who.userId,
  });
}
