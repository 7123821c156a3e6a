/**
 * The OpenAI Images API on ComfyUI: `POST /v1/images/generations` (JSON) and
 * `POST /v1/images/edits` (multipart). Both are synchronous: the job is submitted, parks when
 * every box is busy, and the answer waits for it (a client that hangs up stops the waiting,
 * never the job: it stays the caller's under /v1/jobs). The envelope is OpenAI's; every key
 * it does not know is a workflow param (`n` and `size` too: the compiler turns them into the
 * batch and width/height). JSON goes through the exact parser, so big seeds stay exact.
 *
 * `response_format` defaults to `b64_json`, not OpenAI's `url`: a url here is a job-result
 * URL on this gateway that needs the caller's key to fetch, which clients expecting a public
 * link (an <img src>) cannot send; inline bytes work for everyone.
 *
 * All files of one request (`ref_images`, or the edit's parts) share one byte budget
 * (MEDIA_REQUEST_FILES_LIMIT, 413 past it); an upload's type is sniffed from its bytes, the
 * part's declared type used only when they show none. A job the scheduler could not place
 * (no box up, all busy past the park timeout, the queue full) is a 503 with Retry-After and
 * `x-should-retry: true`; a failed or cancelled one `x-should-retry: false`.
 */
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { badRequest } from '../errors.ts';
import { registerExactJsonParser } from '../wire/exact-json.ts';
import { decodeMediaValue, requireKind } from '../media/inputs/files.ts';
import { spoolDir } from '../media/inputs/upload-spool.ts';
import type { GenerationSubmit, MediaCaller, MediaFile } from '../media/service-types.ts';
import { FORM_FIELD_LIMIT, FORM_FIELDS, MAX_IMAGES, readImageForm } from './media-images-form.ts';
import { outputFormat, responseFormat, resultBytes, resultUrl } from './media-images-output.ts';
import { reserveUpload, uploadBudgetOf, uploadHoldOf, type UploadHold } from './media-upload-budget.ts';
import {
  MEDIA_FILE_LIMIT,
  MEDIA_JSON_BODY_LIMIT,
  mediaInputOptions,
  requestFileBudget,
  settledForClient,
  unfinishedJobError,
  uploadRefusal,
  withRefusals,
  type MediaRequest,
  type MediaRouteDeps,
} from './media-caller.ts';

const GENERATIONS = '/v1/images/generations';
const EDITS = '/v1/images/edits';

/** OpenAI knobs that mean nothing on a ComfyUI workflow: accepted and dropped. */
const IGNORED = new Set(['quality', 'style', 'background', 'moderation', 'user', 'input_fidelity', 'partial_images']);
/** The envelope: read here, never a workflow param. */
const ENVELOPE = new Set([
  'model',
  'prompt',
  'response_format',
  'output_format',
  'output_compression',
  'stream',
  'ref_images',
]);
/** The most results one request may ask for (`n`), as OpenAI's own limit. */
const MAX_N = 10;

export async function mediaImagesRoutes(app: FastifyInstance, deps: MediaRouteDeps): Promise<void> {
  registerExactJsonParser(app);
  await app.register(multipart, {
    // one file more than allowed, so that a file too many is told apart (400) rather than truncated
    limits: {
      fileSize: MEDIA_FILE_LIMIT,
      files: MAX_IMAGES + 2,
      fields: FORM_FIELDS,
      fieldSize: FORM_FIELD_LIMIT,
      parts: FORM_FIELDS + MAX_IMAGES + 2,
    },
  });

  const budget = uploadBudgetOf(app, deps.config);
  const generationsBudget = reserveUpload(budget, uploadRefusal(deps, GENERATIONS));
  const editsBudget = reserveUpload(budget, uploadRefusal(deps, EDITS));

  app.post(GENERATIONS, { bodyLimit: MEDIA_JSON_BODY_LIMIT, preParsing: generationsBudget }, (req, reply) =>
    withRefusals(deps, GENERATIONS, req, reply, async (r) => {
      const caller = await r.identify();
      const body = req.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw badRequest('The request body must be a JSON object.');
      const fields = body as Record<string, unknown>;
      return generate(deps, r, caller, req, reply, fields, async () => {
        const images = await refImages(fields.ref_images, deps, caller, uploadHoldOf(req));
        return images.length ? { images } : undefined;
      });
    }),
  );

  const editLimit = MEDIA_FILE_LIMIT * (MAX_IMAGES + 1) + FORM_FIELDS * FORM_FIELD_LIMIT;
  app.post(EDITS, { bodyLimit: editLimit, preParsing: editsBudget }, (req, reply) =>
    withRefusals(deps, EDITS, req, reply, async (r) => {
      // an unknown caller's upload is not read: identify throws first
      const caller = await r.identify();
      const form = await readImageForm(req, spoolDir(deps.config().jobs_dir), uploadHoldOf(req));
      if (form.images.length === 0) {
        throw badRequest('You must provide an image in the `image` (or `image[]`) part.', 'image', 'missing_image');
      }
      return generate(deps, r, caller, req, reply, form.fields, async () => ({
        images: form.images,
        ...(form.mask ? { mask: form.mask } : {}),
      }));
    }),
  );
}

/**
 * The shared part: envelope → files (only once the envelope passed: no fetch for a refused request) →
 * submit → wait → OpenAI's answer.
 */
async function generate(
  deps: MediaRouteDeps,
  r: MediaRequest,
  caller: MediaCaller,
  req: FastifyRequest,
  reply: FastifyReply,
  fields: Record<string, unknown>,
  readPositional: () => Promise<GenerationSubmit['positional']>,
): Promise<unknown> {
  const media = deps.media();
  if (fields.stream === true || fields.stream === 'true') {
    throw badRequest(
      'Streaming image generation is not supported here; leave `stream` out.',
      'stream',
      'unsupported_parameter',
    );
  }
  const model = generationModel(fields.model, () => media.aliases(caller));
  r.model = model;
  if (typeof fields.prompt !== 'string') {
    throw badRequest(
      fields.prompt === undefined ? 'You must provide a prompt.' : '`prompt` must be a string.',
      'prompt',
      fields.prompt === undefined ? 'missing_prompt' : 'invalid_prompt',
    );
  }
  const format = responseFormat(fields.response_format);
  const output = outputFormat(fields.output_format, fields.output_compression);
  const params: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (ENVELOPE.has(key) || IGNORED.has(key) || value === undefined || value === null) continue;
    params[key] = value;
  }
  checkConvenience(params);
  const positional = await readPositional();

  const job = await media.submit(caller, {
    alias: model,
    prompt: fields.prompt,
    params,
    files: {},
    positional,
    endpoint: r.endpoint,
    requestId: String(req.id),
    release: r.release,
  });
  r.jobId = job.id;
  // the job keeps its own copy of the files: the request's go now, not after a wait of minutes
  delete fields.ref_images;
  if (positional) positional.images.length = 0;
  if (positional) delete positional.mask;
  uploadHoldOf(req)?.release();
  const settled = await settledForClient(media, job.id, reply);
  if (settled.status !== 'done') {
    const err = unfinishedJobError(settled);
    // a failed or cancelled job ends the same way every time: the SDKs should not retry it; a refused one may run later
    reply.header('x-should-retry', err.status === 503 ? 'true' : 'false');
    throw err;
  }
  const data = [];
  for (const result of settled.results) {
    if (format === 'url') data.push({ url: resultUrl(req, result, output) });
    else data.push({ b64_json: (await resultBytes(deps, caller, settled.id, result, output)).toString('base64') });
  }
  return { created: settled.created_at, data };
}

/** The alias asked for; absent, the caller's one generation alias when there is exactly one. */
function generationModel(model: unknown, usable: () => { id: string }[]): string {
  if (model === undefined || model === null) {
    const aliases = usable();
    if (aliases.length === 1) return aliases[0].id;
    throw badRequest(
      aliases.length === 0
        ? 'You must provide a model parameter (no image model is configured for you).'
        : `You must provide a model parameter: one of ${aliases.map((a) => a.id).join(', ')}.`,
      'model',
      'missing_model',
    );
  }
  if (typeof model !== 'string' || model === '')
    throw badRequest('`model` must be a non-empty string.', 'model', 'invalid_model');
  return model;
}

/**
 * `n` and `size` in OpenAI's terms (a positive integer; `<w>x<h>` or `auto`), checked before the
 * compiler sees them.
 */
function checkConvenience(params: Record<string, unknown>): void {
  if (Object.hasOwn(params, 'n')) {
    const n = params.n;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_N)
      throw badRequest(`\`n\` must be an integer from 1 to ${MAX_N}.`, 'n', 'invalid_n');
  }
  if (Object.hasOwn(params, 'size')) {
    const size = params.size;
    if (size === 'auto') delete params.size;
    else if (typeof size !== 'string' || !/^[1-9]\d{0,4}x[1-9]\d{0,4}$/.test(size)) {
      throw badRequest("`size` must be '<width>x<height>' (e.g. '1024x1024') or 'auto'.", 'size', 'invalid_size');
    }
  }
}

/** LocalAI's `ref_images`: a list of base64 / data URI / URL values, placed onto the image slots in order. */
async function refImages(
  value: unknown,
  deps: MediaRouteDeps,
  caller: MediaCaller,
  hold?: UploadHold,
): Promise<MediaFile[]> {
  if (value === undefined || value === null) return [];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list))
    throw badRequest(
      '`ref_images` must be a list of base64 strings, data URIs or URLs.',
      'ref_images',
      'invalid_ref_images',
    );
  if (list.length > MAX_IMAGES)
    throw badRequest(`\`ref_images\` may hold at most ${MAX_IMAGES} images.`, 'ref_images', 'invalid_ref_images');
  // one budget for the whole list: 16 files at the per-file cap would be a gigabyte
  const opts = mediaInputOptions(deps.config(), caller, requestFileBudget('ref_images', hold));
  const files: MediaFile[] = [];
  for (const [i, v] of list.entries()) files.push(await decodeMediaValue(v, `ref_images[${i}]`, opts));
  files.forEach((file, i) => requireKind(file, 'image', `ref_images[${i}]`));
  return files;
}
