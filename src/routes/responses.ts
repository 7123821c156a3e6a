/**
 * The Responses API: `POST /v1/responses` (stream or not, `background: true`, `store: true`,
 * `previous_response_id` for conversations the gateway stored), `GET /v1/responses/{id}`
 * (`?stream=true` replays the events so far, then follows), `POST /v1/responses/{id}/cancel`,
 * `DELETE /v1/responses/{id}`. Stored responses are owner-gated: another key gets the same
 * 404 as an unknown id; admins see all. Thin: the call is the proxy's, the translation the
 * bridge's, the background run background.ts's.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { mayAccess, ownerOf } from '../auth/owner.ts';
import { GatewayError } from '../errors.ts';
import type { ModelCatalogView } from '../routing/catalog.ts';
import { newResponseId } from '../bridges/responses/ids.ts';
import type { BackgroundAdmission } from '../responses/admission.ts';
import type { BackgroundResponses } from '../responses/background.ts';
import { historyAfter } from '../responses/items.ts';
import type { RecentItems } from '../responses/recent-items.ts';
import { queuedResponse } from '../responses/queued.ts';
import type { NativeOrigin, ResponsesRepo, StoredResponse } from '../store/responses-repo.ts';
import type { BodyTransform } from '../surfaces/body-transform.ts';
import { ResponsesSurface } from '../surfaces/responses-surface.ts';
import type { CallerContext } from './caller.ts';
import { JSON_BODY_LIMIT } from './openai.ts';
import { gateOpenAIModel, type GatedModel } from './model-gate.ts';
import { queryOf, runProxiedCall, type ProxiedCallDeps } from './proxied-call.ts';
import { useRawJsonBodies } from './json-body.ts';
import { followStored } from './responses-follow.ts';
import { chainedTo, isResponseId, nativePath, relayNative, visibleNative } from './responses-native.ts';
import type { NativeReadBack } from '../surfaces/responses-readback.ts';

export interface ResponsesRoutesOptions extends ProxiedCallDeps {
  catalog: ModelCatalogView;
  repo: ResponsesRepo;
  background: BackgroundResponses;
  /** The loopback call of a background run, told apart by its marker: the response id and creation time it carries. */
  internalCall: (req: FastifyRequest) => { id: string; createdAt: number } | undefined;
  settings: () => { asyncParkS: number; ttlMs: number };
  /** The reasoning switch and sampling defaults for this call (throws a 400 GatewayError for an invalid switch). */
  transformFor: (ctx: CallerContext, body: Record<string, unknown>, alias: string | undefined) => BodyTransform;
  /** Whether a backend speaks Responses itself. */
  isNative: (backend: string) => boolean;
  /** Output items of recent responses, for `item_reference`. */
  recentItems: RecentItems;
  /** Admits a background run as the scheduler would, holding its place until its call arrives (admission.ts). */
  admission: BackgroundAdmission;
  /** Reads of responses a native backend stored itself, sent to that backend. */
  readBack: NativeReadBack;
  now: () => number;
}

export async function responsesRoutes(app: FastifyInstance, opts: ResponsesRoutesOptions): Promise<void> {
  const { catalog, repo, background, callers } = opts;
  useRawJsonBodies(app, JSON_BODY_LIMIT);

  /**
   * Who asks, as stored responses see it: the owner of what it leaves (auth/owner.ts; a
   * background run's own call acts for the run's creator) and whether it sees every owner's.
   */
  const viewerOf = (req: FastifyRequest, ctx: CallerContext): Viewer => {
    const run = opts.internalCall(req);
    const owner = (run && repo.get(run.id, opts.now())?.owner) ?? ownerOf(ctx.caller, req.ip);
    return { owner, isAdmin: ctx.caller.isAdmin };
  };

  /** The gateway's own row the caller may see, else where a native backend holds it, else an unknown id's 404. */
  const locate = (who: Viewer, id: string): Located => {
    if (!isResponseId(id)) throw responseNotFound(id); // never a lookup, nor a backend's URL
    const row = repo.get(id, opts.now());
    if (row && mayAccess(row.owner, who.owner, who.isAdmin)) return { row };
    const native = visibleNative(repo, id, who.owner, who.isAdmin, opts.now());
    if (native) return { native };
    throw responseNotFound(id);
  };

  app.post('/v1/responses', { bodyLimit: JSON_BODY_LIMIT }, (req: FastifyRequest, reply: FastifyReply) => {
    const internal = opts.internalCall(req);
    const body = req.body as Record<string, unknown>;
    const startBackground = !internal && body && typeof body === 'object' && body.background === true;
    return runProxiedCall(opts, 'responses', req, reply, async (ctx, parsed, model) => {
      const who = viewerOf(req, ctx);
      const gated = nativeChainGate(who, parsed, model, gateOpenAIModel(catalog, model, ctx.caller.allow));
      const history = historyOf(
        who,
        parsed,
        gated.resolution.candidates.some((c) => opts.isNative(c.backend)),
      );
      const id = internal?.id ?? newResponseId();
      const createdAt = internal?.createdAt ?? Math.floor(opts.now() / 1000);
      const transform = opts.transformFor(ctx, parsed, gated.resolution.alias);
      const { owner } = who;
      const surface = new ResponsesSurface({
        query: queryOf(req.url),
        body: parsed,
        rawBody: req.rawBody,
        requested: model,
        id,
        createdAt,
        history,
        transform,
        resolveItem: (itemId) => opts.recentItems.get(owner, itemId),
      });
      const nativeOnly = gated.resolution.candidates.every((c) => opts.isNative(c.backend));
      const problem = nativeOnly ? undefined : surface.translationProblem();
      if (problem)
        throw new GatewayError({
          status: problem.status,
          code: 'invalid_request',
          param: problem.param ?? null,
          message: problem.message,
        });
      if (startBackground) {
        // refused now, as the run's own call would be, rather than told `queued` and failed at once:
        // over the quota (held until the run's call is admitted itself), or by the scheduler
        const { candidates, alias } = gated.resolution;
        const releaseQuota = await callers.admit(ctx, { hasUnpaid: callers.hasUnpaid(candidates) });
        const admitted = opts.admission.admit(candidates, alias ?? model);
        if (admitted.refused) {
          releaseQuota();
          throw admitted.refused;
        }
        const release = () => {
          releaseQuota();
          admitted.release();
        };
        throw new StartBackground({ id, createdAt, model, parsed, history: history ?? [], ctx, owner, release });
      }
      if (internal) background.arrived(internal.id);
      return {
        surface,
        resolution: gated.resolution,
        refreshCandidates: gated.refreshCandidates,
        history,
        parkSeconds: internal ? opts.settings().asyncParkS : undefined,
        answered: () => {
          const final = surface.finalResponse();
          if (final && !internal && parsed.store !== false) rememberNative(surface.nativeOrigin(), owner);
          if (!final || surface.answeredNatively()) return;
          opts.recentItems.remember(owner, final);
          if (internal || parsed.store !== true) return;
          repo.insert(
            {
              id,
              owner,
              status: statusOf(final),
              background: false,
              response: final,
              history: historyAfter(history ?? [], parsed.input, final),
              events: null,
              createdAt,
              expiresAt: opts.now() + opts.settings().ttlMs,
            },
            opts.now(),
          );
        },
      };
    }).catch((err: unknown) => {
      if (!(err instanceof StartBackground)) throw err;
      return startInBackground(err.job, req, reply);
    });
  });

  /** `background: true`: stored as queued, started, answered at once (or followed, with `stream: true`). */
  const startInBackground = (job: BackgroundStart, req: FastifyRequest, reply: FastifyReply) => {
    const queued = queuedResponse(job.id, job.createdAt, job.model, job.parsed);
    const now = opts.now();
    try {
      repo.insert(
        {
          id: job.id,
          owner: job.owner,
          status: 'queued',
          background: true,
          response: queued,
          history: job.history,
          events: null,
          createdAt: job.createdAt,
          expiresAt: now + opts.settings().ttlMs,
        },
        now,
      );
    } catch (err) {
      job.release();
      throw err;
    }
    const { release } = job;
    background.start({
      id: job.id,
      createdAt: job.createdAt,
      body: job.parsed,
      headers: passOn(req, job.ctx),
      history: job.history,
      queued,
      release,
    });
    if (job.parsed.stream === true) return followStored(reply, repo.get(job.id, now)!, background, -1);
    return reply.header('x-request-id', req.id).send(queued);
  };

  app.get('/v1/responses/:id', async (req, reply) => {
    const who = viewerOf(req, callers.identify(req));
    const id = (req.params as { id: string }).id;
    const { row, native } = locate(who, id);
    if (native) return relayNative(reply, opts.readBack, native, 'GET', nativePath(id, '', req.url), id);
    const query = req.query as { stream?: string; starting_after?: string };
    if (query.stream === 'true') return followStored(reply, row, background, Number(query.starting_after ?? -1));
    return row.response;
  });

  app.get('/v1/responses/:id/input_items', async (req, reply) => {
    const who = viewerOf(req, callers.identify(req));
    const id = (req.params as { id: string }).id;
    const { native } = locate(who, id);
    if (native) return relayNative(reply, opts.readBack, native, 'GET', nativePath(id, '/input_items', req.url), id);
    throw new GatewayError({
      status: 404,
      code: 'not_found',
      param: 'id',
      message: `The gateway lists input items only of responses a native backend stored ('${id}' is its own).`,
    });
  });

  app.post('/v1/responses/:id/cancel', async (req, reply) => {
    const who = viewerOf(req, callers.identify(req));
    const id = (req.params as { id: string }).id;
    const { row, native } = locate(who, id);
    if (native) return relayNative(reply, opts.readBack, native, 'POST', nativePath(id, '/cancel', req.url), id);
    if (!row.background)
      throw new GatewayError({
        status: 400,
        code: 'invalid_request',
        message: 'Only responses created with background=true can be cancelled.',
      });
    background.cancel(row.id, row.response, row.history);
    return repo.get(row.id, opts.now())?.response ?? row.response;
  });

  app.delete('/v1/responses/:id', async (req, reply) => {
    const who = viewerOf(req, callers.identify(req));
    const id = (req.params as { id: string }).id;
    const { row, native } = locate(who, id);
    if (native) {
      await relayNative(reply, opts.readBack, native, 'DELETE', nativePath(id, '', req.url), id);
      if (reply.statusCode === 200 || reply.statusCode === 404) repo.forgetNative(id);
      return reply;
    }
    if (background.isRunning(row.id)) background.cancel(row.id, row.response, row.history);
    repo.delete(row.id);
    return { id: row.id, object: 'response', deleted: true };
  });

  /** A native backend's response, remembered for its owner: reads and chains of its id go back there. */
  function rememberNative(origin: { backend: string; id: string } | undefined, owner: string): void {
    if (!origin || !isResponseId(origin.id) || repo.get(origin.id, opts.now())) return;
    const now = opts.now();
    repo.rememberNative(origin.id, { owner, backend: origin.backend }, now, now + opts.settings().ttlMs);
  }

  /** A create continuing a native backend's response goes to that backend (it holds the conversation). */
  function nativeChainGate(who: Viewer, body: Record<string, unknown>, model: string, gated: GatedModel): GatedModel {
    const previous = body.previous_response_id;
    if (typeof previous !== 'string' || repo.get(previous, opts.now())) return gated;
    const origin = visibleNative(repo, previous, who.owner, who.isAdmin, opts.now());
    if (origin) return chainedTo(gated, origin, model, previous);
    // another owner's: not passed on for its backend to continue, the unknown id's answer instead
    if (repo.nativeOrigin(previous, opts.now())) throw previousNotFound(previous);
    return gated;
  }

  /** The stored turns before this one, when the request continues a conversation. */
  function historyOf(who: Viewer, body: Record<string, unknown>, nativeCandidates: boolean): unknown[] | undefined {
    const previous = body.previous_response_id;
    if (previous === undefined || previous === null) return undefined;
    if (typeof previous !== 'string')
      throw new GatewayError({
        status: 400,
        code: 'invalid_request',
        param: 'previous_response_id',
        message: '`previous_response_id` must be a string.',
      });
    const row = repo.get(previous, opts.now());
    if (row && mayAccess(row.owner, who.owner, who.isAdmin)) return row.history;
    // a native backend may know it (its own stored response): passed on as it came
    if (nativeCandidates) return undefined;
    throw previousNotFound(previous);
  }
}

/** Who asks for stored responses: the owner it acts as, and whether it sees every owner's (an admin). */
interface Viewer {
  owner: string;
  isAdmin: boolean;
}

/** A stored response: the gateway's own row, or the native backend that holds it. */
type Located = { row: StoredResponse; native?: undefined } | { row?: undefined; native: NativeOrigin };

interface BackgroundStart {
  id: string;
  createdAt: number;
  model: string;
  parsed: Record<string, unknown>;
  history: unknown[];
  ctx: CallerContext;
  /** Who owns the response (auth/owner.ts). */
  owner: string;
  /** Lets go of the create's hold on the user's quota and on its place in the scheduler (handed to the run). */
  release: () => void;
}

/** Leaves the proxied-call path once the request is validated: a background run answers differently. */
class StartBackground extends Error {
  constructor(readonly job: BackgroundStart) {
    super('background');
  }
}

function previousNotFound(previous: string): GatewayError {
  return new GatewayError({
    status: 400,
    code: 'previous_response_not_found',
    param: 'previous_response_id',
    message:
      `Previous response with id '${previous}' not found. The gateway keeps responses created with store: true ` +
      'or background: true for responses_ttl_h hours.',
  });
}

function responseNotFound(id: string): GatewayError {
  return new GatewayError({
    status: 404,
    code: 'not_found',
    param: 'id',
    message: `Response with id '${id}' not found.`,
  });
}

/** A stored response's status; one the client never saw finish (the stream broke or they left) failed. */
function statusOf(response: Record<string, unknown>): StoredResponse['status'] {
  const s = response.status;
  return s === 'completed' || s === 'incomplete' || s === 'cancelled' ? s : 'failed';
}

/** The headers a background run passes on: the caller's credential, and who the call log should name. */
function passOn(req: FastifyRequest, ctx: CallerContext): Record<string, string> {
  const out: Record<string, string> = { 'x-source': ctx.source };
  for (const name of ['authorization', 'x-api-key']) {
    const v = req.headers[name];
    if (typeof v === 'string') out[name] = v;
  }
  return out;
}
