/**
 * Media jobs, owner-gated: `GET /v1/jobs` (the caller's own; every job for admins),
 * `GET /v1/jobs/{id}`, its files (`/result/{n}` with `?format=&w=&h=` thumbnails, `/input/{n}`,
 * `/preview`), `POST /v1/jobs/{id}/cancel`, and `GET /v1/jobs/{id}/events`, the job's live
 * events as SSE until a terminal one. Someone else's job and a job that does not exist get
 * the same 404, and so does a malformed id or file number.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { badRequest, GatewayError } from '../errors.ts';
import { MAX_N, THUMB_MAX, type ThumbFormat, type ThumbOptions } from '../media/jobs/artifacts.ts';
import { JOB_ID_RE, type JobStatus } from '../media/jobs/job-types.ts';
import type { JobEvent, MediaCaller } from '../media/service-types.ts';
import { SseResponse, StreamKeepalive } from '../wire/sse-response.ts';
import { mediaCaller, sendFile, type MediaRouteDeps } from './media-caller.ts';

const STATUSES: ReadonlySet<string> = new Set<JobStatus>(['queued', 'running', 'done', 'failed', 'cancelled']);
const THUMB_FORMATS: ReadonlySet<string> = new Set<ThumbFormat>(['webp', 'png', 'jpeg']);
const TERMINAL: ReadonlySet<JobEvent['type']> = new Set(['done', 'failed', 'cancelled']);
const N_RE = /^(?:0|[1-9]\d{0,3})$/;
const SIZE_RE = /^[1-9]\d{0,3}$/;
/** Most bytes of events kept for a follower that does not read; past it the stream is dropped. */
const EVENTS_BUFFER_BYTES = 1024 * 1024;
/** A preview is replaced as the job runs: never cached. */
const PREVIEW_MAX_AGE = 0;

export const jobNotFound = (): GatewayError =>
  new GatewayError({
    status: 404,
    code: 'job_not_found',
    type: 'not_found_error',
    param: 'id',
    message: 'No such job (or it is not yours).',
  });

export async function mediaJobsRoutes(app: FastifyInstance, deps: MediaRouteDeps): Promise<void> {
  const callerOf = (req: FastifyRequest): MediaCaller => mediaCaller(deps.callers.identify(req), req.ip);

  app.get('/v1/jobs', async (req) => {
    const caller = callerOf(req);
    const q = req.query as Record<string, unknown>;
    const opts: { limit?: number; status?: JobStatus } = {};
    if (q.limit !== undefined) {
      const limit = Number(q.limit);
      if (typeof q.limit !== 'string' || !/^\d{1,3}$/.test(q.limit) || limit < 1 || limit > 500) {
        throw badRequest('`limit` must be an integer from 1 to 500.', 'limit', 'invalid_limit');
      }
      opts.limit = limit;
    }
    if (q.status !== undefined) {
      if (typeof q.status !== 'string' || !STATUSES.has(q.status)) {
        throw badRequest(`\`status\` must be one of ${[...STATUSES].join(', ')}.`, 'status', 'invalid_status');
      }
      opts.status = q.status as JobStatus;
    }
    return { object: 'list', data: deps.media().list(caller, opts) };
  });

  app.get('/v1/jobs/:id', async (req) => {
    const caller = callerOf(req);
    const view = deps.media().view(jobId(req), caller);
    if (!view) throw jobNotFound();
    return view;
  });

  app.get('/v1/jobs/:id/result/:n', async (req, reply) => {
    const caller = callerOf(req);
    const id = jobId(req);
    const n = fileNumber(req);
    const thumb = thumbOptions(req.query as Record<string, unknown>);
    const media = deps.media();
    const view = media.view(id, caller);
    if (!view) throw jobNotFound();
    const file = await media.result(id, n, caller, thumb);
    if (!file) throw fileNotFound('result', n);
    return sendFile(reply, file, maxAge(view.expires_at));
  });

  app.get('/v1/jobs/:id/input/:n', async (req, reply) => {
    const caller = callerOf(req);
    const id = jobId(req);
    const n = fileNumber(req);
    const media = deps.media();
    const view = media.view(id, caller);
    if (!view) throw jobNotFound();
    const file = await media.input(id, n, caller);
    if (!file) throw fileNotFound('input', n);
    return sendFile(reply, file, maxAge(view.expires_at));
  });

  app.get('/v1/jobs/:id/preview', async (req, reply) => {
    const caller = callerOf(req);
    const id = jobId(req);
    const media = deps.media();
    if (!media.view(id, caller)) throw jobNotFound();
    const file = media.preview(id, caller);
    if (!file)
      throw new GatewayError({
        status: 404,
        code: 'preview_not_found',
        type: 'not_found_error',
        message: 'This job has no preview (yet, or any more).',
      });
    return sendFile(reply, file, PREVIEW_MAX_AGE);
  });

  app.post('/v1/jobs/:id/cancel', async (req) => {
    const caller = callerOf(req);
    const view = await deps.media().cancel(jobId(req), caller);
    if (!view) throw jobNotFound();
    return view;
  });

  app.get('/v1/jobs/:id/events', async (req, reply) => followEvents(deps, req, reply, callerOf(req), jobId(req)));
}

/** The `:id` path param, or the same 404 as a job that is not the caller's. */
function jobId(req: FastifyRequest): string {
  const id = (req.params as { id?: string }).id;
  if (typeof id !== 'string' || !JOB_ID_RE.test(id)) throw jobNotFound();
  return id;
}

function fileNumber(req: FastifyRequest): number {
  const n = (req.params as { n?: string }).n;
  if (typeof n !== 'string' || !N_RE.test(n) || Number(n) > MAX_N) throw fileNotFound('file', n);
  return Number(n);
}

const fileNotFound = (what: string, n: unknown): GatewayError =>
  new GatewayError({
    status: 404,
    code: `${what}_not_found`,
    type: 'not_found_error',
    message: `This job has no ${what} ${String(n).slice(0, 8)}.`,
  });

/**
 * `?format=webp|png|jpeg&w=&h=`: a thumbnail (format defaults to webp when only a size is given); none
 * of them: the file itself.
 */
function thumbOptions(q: Record<string, unknown>): ThumbOptions | undefined {
  if (q.format === undefined && q.w === undefined && q.h === undefined) return undefined;
  const format = q.format ?? 'webp';
  if (typeof format !== 'string' || !THUMB_FORMATS.has(format))
    throw badRequest("`format` must be 'webp', 'png' or 'jpeg'.", 'format', 'invalid_format');
  const size = (name: 'w' | 'h'): number | undefined => {
    const v = q[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || !SIZE_RE.test(v) || Number(v) > THUMB_MAX)
      throw badRequest(`\`${name}\` must be an integer from 1 to ${THUMB_MAX}.`, name, `invalid_${name}`);
    return Number(v);
  };
  const w = size('w');
  const h = size('h');
  return { format: format as ThumbFormat, ...(w !== undefined ? { w } : {}), ...(h !== undefined ? { h } : {}) };
}

/** Seconds until the job (and so its files) expire. */
function maxAge(expiresAt: number): number {
  return Math.max(0, Math.floor(expiresAt - Date.now() / 1000));
}

/**
 * SSE: `event: <type>\ndata: <json>\n\n` per JobEvent (the current state first), a
 * `: keep-alive` comment after `stream_keepalive_s` of silence, the end after a terminal
 * event; the subscription ends when the client goes.
 */
function followEvents(
  deps: MediaRouteDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  caller: MediaCaller,
  id: string,
): FastifyReply {
  // subscribe may call the listener at once (the current state; a finished job's end): hold
  // those until it is known that the job is the caller's, i.e. that the answer is no 404
  const early: JobEvent[] = [];
  let sse: SseResponse | undefined;
  let ended = false;
  let unsubscribe: (() => void) | undefined;
  let keepalive: StreamKeepalive | undefined;
  const stop = () => {
    ended = true;
    keepalive?.stop();
    unsubscribe?.();
  };
  const write = (event: JobEvent) => {
    if (ended) return;
    if (!sse) return void early.push(event);
    if (sse.closed) return stop();
    void sse.write(Buffer.from(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`), 0)?.catch(() => {});
    if (sse.raw.writableLength > EVENTS_BUFFER_BYTES) {
      stop();
      sse.destroy();
      return;
    }
    if (TERMINAL.has(event.type)) {
      stop();
      sse.end();
    }
  };
  unsubscribe = deps.media().subscribe(id, caller, write);
  if (!unsubscribe) throw jobNotFound();
  sse = new SseResponse(reply, { 'x-request-id': String(req.id) });
  sse.ensureHead();
  reply.raw.once('close', stop);
  const held = early.splice(0);
  for (const event of held) write(event);
  if (!ended) keepalive = new StreamKeepalive(sse, deps.config().stream_keepalive_s * 1000, () => ': keep-alive\n\n');
  return reply;
}
