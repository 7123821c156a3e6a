/**
 * The native generation API: `POST /v1/generations` `{model, prompt?, mode, params?, images?,
 * files?}` (sync: the settled job; async: 202 with its id and a Location to poll) and
 * `GET /v1/generations/{alias}/loras`. JSON through the exact parser (seeds beyond 2^53
 * arrive as bigint). `images` / `files` values are base64, data URIs or http(s) URLs, decoded
 * strictly: a key that is not a file input of the alias is a 400 before anything is read or
 * fetched (MediaService.fileParams); an unreadable value is a 400 naming it, one over 64 MiB
 * a 413, and `images` and `files` together share one byte budget (MEDIA_REQUEST_FILES_LIMIT).
 *
 * A sync request answers 200 with the settled job whatever its end: a failed job, a
 * cancelled one and one the scheduler could not place (error code `no_backend`,
 * `parking_off`, `queue_full`, `park_timeout`: every box down or busy past
 * `media_park_timeout_s`) all carry their status and error in the view; the client reads
 * `status`, and may retry the scheduler's refusals later. (The Images API, whose clients
 * only read HTTP statuses, answers those 503 with Retry-After.)
 */
import type { FastifyInstance } from 'fastify';
import { badRequest, GatewayError, modelNotFound } from '../errors.ts';
import { registerExactJsonParser } from '../wire/exact-json.ts';
import { decodeFileMap } from '../media/inputs/files.ts';
import type { MediaCaller, MediaFile } from '../media/service-types.ts';
import {
  MEDIA_JSON_BODY_LIMIT,
  mediaCaller,
  mediaInputOptions,
  requestFileBudget,
  settledForClient,
  uploadRefusal,
  withRefusals,
  type MediaRouteDeps,
} from './media-caller.ts';
import { reserveUpload, uploadBudgetOf, uploadHoldOf, type UploadHold } from './media-upload-budget.ts';

const GENERATIONS = '/v1/generations';
const KEYS = new Set(['model', 'prompt', 'mode', 'params', 'images', 'files']);

export async function mediaNativeRoutes(app: FastifyInstance, deps: MediaRouteDeps): Promise<void> {
  registerExactJsonParser(app);

  const budget = reserveUpload(uploadBudgetOf(app, deps.config), uploadRefusal(deps, GENERATIONS));
  app.post(GENERATIONS, { bodyLimit: MEDIA_JSON_BODY_LIMIT, preParsing: budget }, (req, reply) =>
    withRefusals(deps, GENERATIONS, req, reply, async (r) => {
      const caller = await r.identify();
      const body = req.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw badRequest('The request body must be a JSON object.');
      const b = body as Record<string, unknown>;
      for (const key of Object.keys(b)) {
        if (!KEYS.has(key))
          throw badRequest(`Unknown field '${key}' (workflow parameters go in \`params\`).`, key, 'unknown_field');
      }
      if (b.model === undefined || b.model === null)
        throw badRequest('You must provide a model parameter.', 'model', 'missing_model');
      if (typeof b.model !== 'string' || b.model === '')
        throw badRequest('`model` must be a non-empty string.', 'model', 'invalid_model');
      r.model = b.model;
      if (b.prompt !== undefined && b.prompt !== null && typeof b.prompt !== 'string')
        throw badRequest('`prompt` must be a string.', 'prompt', 'invalid_prompt');
      const mode = b.mode ?? 'sync';
      if (mode !== 'sync' && mode !== 'async')
        throw badRequest("`mode` must be 'sync' or 'async'.", 'mode', 'invalid_mode');
      const params = objectField(b.params, 'params');
      const media = deps.media();
      const files = await readFiles(deps, caller, b.model, b.images, b.files, uploadHoldOf(req));

      const job = await media.submit(caller, {
        alias: b.model,
        ...(typeof b.prompt === 'string' ? { prompt: b.prompt } : {}),
        params,
        files,
        endpoint: GENERATIONS,
        requestId: String(req.id),
        release: r.release,
      });
      r.jobId = job.id;
      // the job keeps its own copy of the files: the request's go now, not after a wait of minutes
      delete b.images;
      delete b.files;
      uploadHoldOf(req)?.release();
      if (mode === 'async') {
        return reply
          .code(202)
          .header('location', `/v1/jobs/${job.id}`)
          .send({ job_id: job.id, ...job });
      }
      // the job carries its own status and error: a failed, cancelled or unplaced one is answered too
      return settledForClient(media, job.id, reply);
    }),
  );

  app.get('/v1/generations/:alias/loras', async (req) => {
    const caller = mediaCaller(deps.callers.identify(req), req.ip);
    const alias = (req.params as { alias: string }).alias;
    const loras = deps.media().loras(alias, caller);
    if (!loras) throw generationNotFound(alias);
    return { object: 'list', data: loras.map((name) => ({ id: name, object: 'lora' })) };
  });
}

export const generationNotFound = (alias: string): GatewayError =>
  new GatewayError({
    status: 404,
    code: 'model_not_found',
    type: 'not_found_error',
    param: 'model',
    message: `The generation model \`${alias}\` does not exist or you do not have access to it.`,
  });

function objectField(value: unknown, name: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw badRequest(`\`${name}\` must be an object.`, name, `invalid_${name}`);
  return value as Record<string, unknown>;
}

/**
 * `images` and `files` decoded (strict), as one map by param: a param in both is refused, and
 * so is (before anything is fetched) one that is not a file input of the alias; an alias the
 * caller may not use is the service's 404 already here. One byte budget for both maps.
 */
async function readFiles(
  deps: MediaRouteDeps,
  caller: MediaCaller,
  alias: string,
  images: unknown,
  files: unknown,
  hold: UploadHold | undefined,
): Promise<Record<string, MediaFile>> {
  const imageMap = objectField(images, 'images');
  const fileMap = objectField(files, 'files');
  if (Object.keys(imageMap).length === 0 && Object.keys(fileMap).length === 0) return {};
  for (const key of Object.keys(fileMap)) {
    if (Object.hasOwn(imageMap, key))
      throw badRequest(`\`${key}\` is given in both \`images\` and \`files\`.`, `files.${key}`, 'duplicate_file');
  }
  const media = deps.media();
  const allowed = media.fileParams ? media.fileParams(alias, caller) : undefined;
  if (media.fileParams && !allowed) throw modelNotFound(alias);
  const opts = mediaInputOptions(deps.config(), caller, requestFileBudget('files', hold));
  return {
    ...(await decodeFileMap(imageMap, allowed, 'images', opts)),
    ...(await decodeFileMap(fileMap, allowed, 'files', opts)),
  };
}
