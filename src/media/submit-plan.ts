/**
 * Deciding, before any job exists, whether a generation request can run: the alias (as the
 * caller may use it), the boxes that have every LoRA it asks for, its positional images
 * placed onto the alias's image slots, and a dry compile for the first box so that a bad
 * parameter is a 400 naming it now, not a failed job later. Pure: the catalog and scheduler
 * views come in as functions.
 */
import { filterAllowed } from '../auth/allow.ts';
import { badRequest, GatewayError, modelNotFound } from '../errors.ts';
import {
  compile,
  effectiveMapping,
  fileKindsOf,
  fileParamsOf,
  isImageLoaderClass,
  isLoraParam,
  type ObjectInfo,
  type ResolvedEntry,
  type Workflow,
} from './compiler/index.ts';
import { extOf } from './jobs/artifacts.ts';
import { requireKind } from './inputs/files.ts';
import { aliasLimits, checkBounds } from './request-bounds.ts';
import type { GenerationCandidate, GenerationCatalog } from './generation-catalog.ts';
import type { GenerationSubmit, MediaCaller, MediaFile } from './service-types.ts';

export interface PlanViews {
  catalog: GenerationCatalog;
  objectInfo: (backend: string) => ObjectInfo | undefined;
  /** Candidates a lease could go to (known, enabled, healthy), in scheduler order. */
  routable: (backends: string[]) => string[];
  /** None of `backends` is up: wakes the sleeping ones (`wake`); true while their boot window is open. */
  wake?: (backends: string[]) => boolean;
  /** Why none of `backends` can take a job now, worded for the caller (routing/refusal-explainer.ts). */
  explainDown?: (backends: string[], alias: string, caller: MediaCaller) => ExplainedDown | undefined;
}

/** Why no box can take a job: the sentence and `error.candidates`. */
export interface ExplainedDown {
  message: string;
  candidates: object[];
}

export interface AcceptedPlan {
  candidates: () => GenerationCandidate[];
  /** The params the job runs with. */
  params: Record<string, unknown>;
  files: Record<string, MediaFile & { ext: string }>;
  /** The params of `files` whose inputs load images (for requireReadableImages). */
  imageParams: string[];
  seedDraw: number;
  seed?: string;
}

/** The candidates of `alias` this caller may use, with the LoRAs asked for; throws 404 / 400. */
export function allowedCandidates(
  views: PlanViews,
  caller: MediaCaller,
  alias: string,
  params: Record<string, unknown>,
): GenerationCandidate[] {
  const model = views.catalog.get(alias);
  if (!model) throw modelNotFound(alias);
  const permitted = new Set(
    filterAllowed(caller.allow, {
      requested: alias,
      alias,
      candidates: model.candidates.map((c) => ({ backend: c.backend, model: alias })),
    }).map((c) => c.backend),
  );
  if (permitted.size === 0) throw modelNotFound(alias);
  const wanted = requestedLoras(params);
  const { candidates, missingEverywhere } = views.catalog.withLoras(alias, wanted);
  if (missingEverywhere.length > 0) {
    throw badRequest(
      `LoRA '${missingEverywhere[0]}' is not installed on any backend of ${alias}`,
      loraParam(params, missingEverywhere[0]),
      'lora_not_found',
    );
  }
  const usable = candidates.filter((c) => permitted.has(c.backend));
  if (usable.length === 0) {
    throw badRequest(
      `no backend you may use for ${alias} has every LoRA asked for (${wanted.join(', ')})`,
      'lora_1',
      'lora_not_found',
    );
  }
  return usable;
}

/** Accepts the request for `candidates` (throws a GatewayError), or says what it will run with. */
export function acceptRequest(
  views: PlanViews,
  request: GenerationSubmit,
  candidates: GenerationCandidate[],
  jobId: string,
  caller?: MediaCaller,
): AcceptedPlan {
  const boxes = candidates.map((c) => c.backend);
  const up = views.routable(boxes);
  // none up, but sleeping boxes being woken: accepted, the job parks for them (wake-lease.ts)
  const order = up.length > 0 || !views.wake?.(boxes) ? up : boxes;
  if (order.length === 0) {
    const why =
      caller &&
      views.explainDown?.(
        candidates.map((c) => c.backend),
        request.alias,
        caller,
      );
    const message = why?.message ?? `no ComfyUI backend for ${request.alias} is up right now`;
    throw new GatewayError({ status: 503, code: 'no_backend', message, retryAfter: 5, candidates: why?.candidates });
  }
  const first = candidates.find((c) => c.backend === order[0])!;
  const objectInfo = views.objectInfo(first.backend);
  const resolved = effectiveMapping(first.alias, objectInfo);
  const mapping = resolved.ok ? resolved.mapping : {};
  const files = placeFiles(mapping, first.alias.workflow, objectInfo, request);
  const kinds = fileKindsOf(mapping, first.alias.workflow, objectInfo);
  for (const [param, file] of Object.entries(files)) {
    const kind = kinds.get(param);
    if (kind) requireKind(file, kind, param);
  }
  const params = imagesApiParams(request, mapping);
  const seedDraw = Math.random();
  const images = Object.fromEntries(Object.entries(files).map(([param, f]) => [param, { ext: f.ext }]));
  const compiled = compile(params, first.alias, { jobId, images, objectInfo, random: () => seedDraw });
  if (!compiled.ok) {
    const { error } = compiled;
    const param = requestParam(params, error.param ?? null);
    if (error.status === 400) throw badRequest(error.message, param, 'invalid_parameter');
    throw new GatewayError({
      status: 500,
      code: 'alias_misconfigured',
      type: 'api_error',
      message: `${request.alias} is misconfigured: ${error.message}`,
    });
  }
  const limits = views.catalog.get(request.alias)?.limits ?? aliasLimits([]);
  checkBounds(request.alias, params, compiled.prompt, mapping, limits);
  const names = new Set(candidates.map((c) => c.backend));
  return {
    candidates: () =>
      views.catalog
        .withLoras(request.alias, requestedLoras(request.params))
        .candidates.filter((c) => names.has(c.backend)),
    params,
    files,
    imageParams: Object.keys(files).filter((param) => kinds.get(param) === 'image'),
    seedDraw,
    ...(compiled.seed !== undefined ? { seed: compiled.seed } : {}),
  };
}

/**
 * The mapping of the alias's first routable candidate (the alias's one mapping, suggestions
 * read against that box's object_info), for deciding which params take files before any
 * file is read. Throws the 404 / 400 of allowedCandidates.
 */
export function fileParams(views: PlanViews, caller: MediaCaller, alias: string): Set<string> {
  const candidates = allowedCandidates(views, caller, alias, {});
  const backend = views.routable(candidates.map((c) => c.backend))[0] ?? candidates[0].backend;
  const first = candidates.find((c) => c.backend === backend)!;
  const objectInfo = views.objectInfo(first.backend);
  const resolved = effectiveMapping(first.alias, objectInfo);
  return resolved.ok ? fileParamsOf(resolved.mapping, first.alias.workflow, objectInfo) : new Set();
}

/**
 * Named files (each onto an input that loads a file) plus the positional ones (images in slot order,
 * then the mask slot).
 */
function placeFiles(
  mapping: Record<string, ResolvedEntry>,
  workflow: Workflow,
  objectInfo: ObjectInfo | undefined,
  request: GenerationSubmit,
): Record<string, MediaFile & { ext: string }> {
  const out: Record<string, MediaFile & { ext: string }> = {};
  const takesFiles = fileParamsOf(mapping, workflow, objectInfo);
  for (const [param, file] of Object.entries(request.files)) {
    if (!Object.hasOwn(mapping, param)) {
      const known = Object.keys(mapping).sort().join(', ') || 'none';
      throw badRequest(
        `'${param}' is not an input of ${request.alias}; it takes: ${known}`,
        param,
        'invalid_parameter',
      );
    }
    if (!takesFiles.has(param)) {
      const inputs = [...takesFiles].sort().join(', ') || 'none';
      throw badRequest(
        `'${param}' is not a file input of ${request.alias} (send it in params); its file inputs: ${inputs}`,
        param,
        'invalid_parameter',
      );
    }
    out[param] = withExt(file);
  }
  const positional = request.positional;
  if (!positional) return out;
  const slots = Object.entries(mapping)
    .filter(([, e]) => workflow[e.node] && isImageLoaderClass(workflow[e.node].class_type))
    .map(([param, e]) => ({ param, mask: param === 'mask' || workflow[e.node].class_type === 'LoadImageMask' }));
  const free = slots.filter((s) => !Object.hasOwn(out, s.param));
  if (positional.mask) {
    const slot = free.find((s) => s.mask);
    if (!slot) throw badRequest(`${request.alias} takes no mask`, 'mask', 'invalid_parameter');
    out[slot.param] = withExt(positional.mask);
    free.splice(free.indexOf(slot), 1);
  }
  const imageSlots = free.filter((s) => !s.mask);
  if (positional.images.length > imageSlots.length) {
    throw badRequest(
      `${request.alias} takes ${imageSlots.length} image${imageSlots.length === 1 ? '' : 's'}, ` +
        `${positional.images.length} were sent`,
      'image',
      'invalid_parameter',
    );
  }
  positional.images.forEach((image, i) => {
    out[imageSlots[i].param] = withExt(image);
  });
  return out;
}

/**
 * The Images API's `size` is sent by every OpenAI client whatever the model; on an alias with
 * no width/height to set (an inpaint, an audio model) it is dropped rather than refused.
 * The native API keeps every param strict.
 */
function imagesApiParams(request: GenerationSubmit, mapping: Record<string, ResolvedEntry>): Record<string, unknown> {
  if (!request.endpoint.startsWith('/v1/images/') || !Object.hasOwn(request.params, 'size')) return request.params;
  if (Object.hasOwn(mapping, 'width') || Object.hasOwn(mapping, 'height')) return request.params;
  const { size: _dropped, ...rest } = request.params;
  return rest;
}

/** The param the request set for a compiler param: `n` for batch, `size` for width / height when it sent those. */
function requestParam(params: Record<string, unknown>, param: string | null): string | null {
  if (param === 'batch' && Object.hasOwn(params, 'n')) return 'n';
  if ((param === 'width' || param === 'height') && Object.hasOwn(params, 'size')) return 'size';
  return param;
}

function withExt(file: MediaFile): MediaFile & { ext: string } {
  return { ...file, ext: extOf(file.mime) };
}

/** `lora_1…lora_N` values, in order. */
function requestedLoras(params: Record<string, unknown>): string[] {
  return Object.entries(params)
    .filter(([k, v]) => isLoraParam(k) && typeof v === 'string' && v !== '' && v !== 'None')
    .sort(([a], [b]) => Number(a.slice(5)) - Number(b.slice(5)))
    .map(([, v]) => v as string);
}

function loraParam(params: Record<string, unknown>, name: string): string {
  return Object.entries(params).find(([k, v]) => isLoraParam(k) && v === name)?.[0] ?? 'lora_1';
}
