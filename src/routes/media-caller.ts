/**
 * What the media routes share: who is calling as the media service sees it (owner, admin,
 * allow-list), the refusal bookkeeping (a request refused before a job exists goes into the
 * call log like a refused LLM call), the fetch limits for client-supplied URLs and the one
 * byte budget of a request's files, waiting for a synchronous generation, the answer of one
 * that did not end `done`, and the file answers' headers.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ownerOf } from '../auth/owner.ts';
import type { GatewayConfig } from '../config/types.ts';
import { GatewayError, type ErrorType } from '../errors.ts';
import { byteBudget, type ByteBudget, type FetchOptions } from '../media/inputs/fetch.ts';
import { formatBytes, MediaInputError } from '../media/inputs/errors.ts';
import type { FileAnswer, JobView, MediaCaller, MediaService } from '../media/service-types.ts';
import type { CallOutcome } from '../stats/call-outcome.ts';
import type { CallerContext, Callers } from './caller.ts';
import { ticketUserOf } from './ticket-user.ts';
import type { UploadHold } from './media-upload-budget.ts';

export interface MediaRouteDeps {
  callers: Callers;
  /** The media service (read per request: the gateway may build it after the routes). */
  media: () => MediaService;
  /** Records a request the route refused (the service logs the jobs it ran itself). */
  recordOutcome: (outcome: CallOutcome) => void;
  config: () => GatewayConfig;
}

/** One file a client sends (upload, base64, data URI, fetched URL); 413 past it (ARCHITECTURE §3). */
export const MEDIA_FILE_LIMIT = 64 * 1024 * 1024;
/** All files of one request together (uploads, base64, data URIs, fetched URLs); 413 past it. */
export const MEDIA_REQUEST_FILES_LIMIT = 4 * MEDIA_FILE_LIMIT;
/** How long a client-supplied URL may take to fetch. */
export const REF_FETCH_TIMEOUT_MS = 30_000;
/**
 * JSON bodies of the media routes: a 64 MiB file is ~85.4 MiB as base64, plus the rest of the
 * request. One file at the limit fits; several big ones belong in URLs or a multipart edit.
 */
export const MEDIA_JSON_BODY_LIMIT = 96 * 1024 * 1024;

/**
 * The caller as the media service sees it. The owner is auth/owner.ts's: the user, the master
 * key, or, while the gateway is bootstrap-open, the client's IP (each address owns its jobs;
 * open-mode callers are admins for the admin API on loopback, never for job visibility).
 */
export function mediaCaller(ctx: CallerContext, ip: string): MediaCaller {
  const { caller } = ctx;
  const anonymous = caller.kind === 'anonymous';
  return {
    owner: ownerOf(caller, ip),
    admin: anonymous ? false : caller.isAdmin,
    allow: caller.allow,
    source: ctx.source,
    userId: ctx.userId,
    ticketUser: ticketUserOf(caller),
  };
}

/**
 * The refusal bookkeeping of one media request: `refused(err, req)` records a GatewayError
 * thrown before any job existed (auth, validation, unknown alias, a quota) in the call log,
 * with backend `(refused)`, then hands the error back to be thrown.
 */
export class MediaRequest {
  readonly startedAt = Date.now();
  ctx?: CallerContext;
  model: string | null = null;
  /** Set once the service accepted the job: from then on nothing is a refusal. */
  jobId?: string;
  /**
   * The caller's quota hold, taken by `identify()`: the job counts as running against its
   * user's quotas from the submit on, so concurrent submits cannot all slip past a limit. The
   * job hands it back once its own call-log row is written; a request refused before any job
   * existed hands it back at once (idempotent).
   */
  release: () => void = () => {};

  constructor(
    private readonly deps: MediaRouteDeps,
    readonly endpoint: string,
    private readonly req: FastifyRequest,
  ) {}

  /**
   * Authenticates (401 otherwise) and admits the job against the caller's quotas (429), holding
   * it as running (`release`) until the job's row is on record: pass `release` to the service.
   */
  async identify(): Promise<MediaCaller> {
    this.ctx = this.deps.callers.identify(this.req);
    // a job reports no cost: a spent cost quota or budget does not refuse it (its ticket's paid gate still applies)
    this.release = await this.deps.callers.admit(this.ctx, { hasUnpaid: true });
    return mediaCaller(this.ctx, this.req.ip);
  }

  refused(err: unknown, reply: FastifyReply): unknown {
    // no job took the hold over: a refused request costs nothing (the recorded fail path released it already)
    if (this.jobId === undefined) this.release();
    if (!(err instanceof GatewayError) || this.jobId !== undefined || reply.sent || reply.raw.headersSent) return err;
    // the service filed a job and logged its end already (input_write_failed…)
    if ((err as { recorded?: unknown }).recorded === true) return err;
    const who = this.ctx ?? this.deps.callers.anonymous(this.req);
    this.deps.recordOutcome({
      requestId: String(this.req.id),
      endpoint: this.endpoint,
      requestedModel: this.model,
      backend: null,
      model: null,
      status: err.status,
      reason: err.reason,
      startedAt: this.startedAt,
      durationMs: Date.now() - this.startedAt,
      ttftMs: null,
      source: who.source,
      userId: who.userId,
    });
    return err;
  }
}

/** Runs a media request; a GatewayError thrown before the job exists is logged as a refusal. */
export async function withRefusals<T>(
  deps: MediaRouteDeps,
  endpoint: string,
  req: FastifyRequest,
  reply: FastifyReply,
  run: (r: MediaRequest) => Promise<T>,
): Promise<T> {
  const r = new MediaRequest(deps, endpoint, req);
  try {
    return await run(r);
  } catch (err) {
    throw r.refused(err, reply);
  }
}

/**
 * Options for reading client-supplied files (input-files.ts): size cap, URL fetch limits, and
 * `budget`, the request's one byte budget (requestFileBudget) every file of it counts against.
 * Private, loopback and link-local URLs are fetched for admins only (the master key, admin
 * users), and for them only while `ref_url_allow_private` is on: any other caller (a user key,
 * an open gateway's anonymous client) would make the gateway reach into its own network for it.
 */
export function mediaInputOptions(config: GatewayConfig, caller: MediaCaller, budget?: ByteBudget): FetchOptions {
  const allowPrivate = caller.admin && (config.ref_url_allow_private ?? true);
  return { maxBytes: MEDIA_FILE_LIMIT, allowPrivate, timeoutMs: REF_FETCH_TIMEOUT_MS, ...(budget ? { budget } : {}) };
}

/**
 * The byte budget of one request's files (MEDIA_REQUEST_FILES_LIMIT), shared by all its lists
 * and maps; `param` names the refusal. With `hold`, what is read beyond the body (fetched URLs,
 * decoded base64) counts against the gateway's upload budget too (503 past it).
 */
export function requestFileBudget(param: string, hold?: UploadHold): ByteBudget {
  const gateway: ByteBudget | undefined = hold && { take: (bytes) => hold.count(bytes) };
  return byteBudget(
    MEDIA_REQUEST_FILES_LIMIT,
    () =>
      new MediaInputError(
        413,
        param,
        'files_too_large',
        `The files of this request are larger than ${formatBytes(MEDIA_REQUEST_FILES_LIMIT)} together.`,
      ),
    gateway,
  );
}

/** Records an upload the gateway's budget refused (503 / 413, before any caller is known) as a refusal. */
export function uploadRefusal(
  deps: MediaRouteDeps,
  endpoint: string,
): (req: FastifyRequest, err: GatewayError) => void {
  return (req, err) => {
    const who = deps.callers.anonymous(req);
    deps.recordOutcome({
      requestId: String(req.id),
      endpoint,
      requestedModel: null,
      backend: null,
      model: null,
      status: err.status,
      reason: err.reason,
      startedAt: Date.now(),
      durationMs: 0,
      ttftMs: null,
      source: who.source,
      userId: who.userId,
    });
  };
}

/**
 * An AbortSignal that fires when the client hangs up before its answer went out: a
 * synchronous request stops waiting then, while its job goes on (it is the client's by id).
 */
export function clientGone(reply: FastifyReply): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort();
  };
  reply.raw.once('close', onClose);
  return { signal: controller.signal, dispose: () => reply.raw.off('close', onClose) };
}

/** The client left while its synchronous generation ran: nothing can be answered (the job goes on). */
export const clientClosed = (): GatewayError =>
  new GatewayError({
    status: 499,
    code: 'client_closed',
    message: 'The client closed the connection before the generation finished.',
  });

/** A synchronous generation's wait: the settled job, or clientClosed once the client hung up (the job goes on). */
export async function settledForClient(media: MediaService, jobId: string, reply: FastifyReply): Promise<JobView> {
  const gone = clientGone(reply);
  try {
    return await media.settled(jobId, gone.signal);
  } catch (err) {
    if (gone.signal.aborted) throw clientClosed();
    throw err;
  } finally {
    gone.dispose();
  }
}

/** Job error codes that are the scheduler's refusal (every box busy or down), not a failure of the generation. */
export const SCHEDULER_REFUSALS: ReadonlySet<string> = new Set([
  'no_backend',
  'parking_off',
  'queue_full',
  'park_timeout',
  'backend_not_awake',
]);
/** Retry-After (seconds) of a generation the scheduler refused. */
const REFUSAL_RETRY_AFTER_S = 5;

/**
 * The answer of a synchronous generation that did not end `done`: a failed job is the
 * backend's failure (502, OpenAI's `server_error` type, the job's own message) — unless the
 * scheduler refused it (no box up, every one busy past the park timeout, the queue full):
 * that is a 503 with Retry-After, worth retrying later. A cancelled one is a 409, since
 * someone (the owner or an admin, through /v1/jobs/{id}/cancel) ended it on purpose: not a
 * gateway fault, and nothing a retry would change. Either way the job id is in the message,
 * so the client can look at the job.
 */
export function unfinishedJobError(job: JobView): GatewayError {
  if (job.status === 'cancelled') {
    return new GatewayError({
      status: 409,
      code: 'generation_cancelled',
      message: `The generation was cancelled (job ${job.id}).`,
    });
  }
  if (job.error && SCHEDULER_REFUSALS.has(job.error.code)) {
    return new GatewayError({
      status: 503,
      code: job.error.code,
      type: 'api_error',
      retryAfter: REFUSAL_RETRY_AFTER_S,
      message: `No ComfyUI backend could take the generation (job ${job.id}): ${job.error.message}`,
    });
  }
  return new GatewayError({
    status: 502,
    code: 'generation_failed',
    // OpenAI's type for a failure on its side; the gateway's ErrorType has no name for it
    type: 'server_error' as ErrorType,
    message: `The generation failed (job ${job.id}): ${job.error?.message ?? 'no reason given'}`,
  });
}

/** Types a browser shows as media, never as a document that could run or draw a page: sent inline. */
const INLINE_TYPES = /^(?:image\/(?:png|apng|jpeg|gif|webp|avif|bmp|tiff|heic|heif)|audio\/[\w.+-]+|video\/[\w.+-]+)$/;
/** Other types kept as they are (a download all the same): meshes, raw bytes, JSON data. */
const KEPT_TYPES = /^(?:model\/[\w.+-]+|application\/(?:octet-stream|json|x-fbx))$/;

/**
 * The headers a job's file goes out with. A file's type is what its bytes showed, or what a
 * client or a box declared when nothing did (a mesh input, a custom node's output): only
 * raster images, audio and video are inline; anything else (SVG, HTML, XML, text…) is an
 * attachment, its type octet-stream unless it is one a browser never renders (KEPT_TYPES).
 * Pure.
 */
export function fileHeaders(mime: string, name: string): { type: string; disposition: string } {
  const type = mime.split(';')[0].trim().toLowerCase();
  const safeName = name.replace(/[^\w.-]/g, '_');
  if (INLINE_TYPES.test(type)) return { type, disposition: `inline; filename="${safeName}"` };
  const kept = KEPT_TYPES.test(type) ? type : 'application/octet-stream';
  return { type: kept, disposition: `attachment; filename="${safeName}"` };
}

/**
 * Sends a job's file: its type, inline (media) or as an attachment (fileHeaders), cacheable by
 * the caller only (`maxAge` seconds). Nothing is sniffed by the browser, and one opening the
 * file runs nothing (sandboxed, no sub-resources).
 */
export function sendFile(reply: FastifyReply, file: FileAnswer, maxAge: number): FastifyReply {
  const { type, disposition } = fileHeaders(file.mime, file.name);
  return reply
    .header('content-type', type)
    .header('content-length', String(file.bytes.length))
    .header('content-disposition', disposition)
    .header('cache-control', maxAge > 0 ? `private, max-age=${maxAge}` : 'private, no-store')
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'; sandbox")
    .send(file.bytes);
}
