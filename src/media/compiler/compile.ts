/**
 * A request plus an alias → the prompt to queue on ComfyUI.
 *
 * In order: copy the workflow; apply the pins (coerced to each input's type); write the mapped
 * params (`size` → width/height, `n` → batch; a random seed when none is given); fill the image
 * slots (an upload each) or handle the empty ones per `on_empty`; fill the LoRA slots; remove
 * the disabled slots with what depends on them; bypass. A pinned field is never written by a
 * request: asking for it is a 400, as is any parameter the alias does not know, so a typo
 * never passes unnoticed. A 500 means the alias itself is wrong (validateAlias reports it).
 */
import { bypassNode, removeWithDependents, resolveNode, sortedIds, type GraphEdit } from './graph.ts';
import { isLoraParam, isStrengthParam } from './lora-params.ts';
import { applyLoras, loraRequests, pinKey } from './loras.ts';
import {
  classInfo,
  fileKindOf,
  inputDecl,
  isFileInput,
  isImageLoaderClass,
  type FileKind,
  type InputDecl,
} from './object-info.ts';
import { outputNodes } from './outputs.ts';
import { PLACEHOLDER_IMAGE_NAME } from './placeholder.ts';
import { suggestMapping } from './suggest.ts';
import { coerceValue, isScalar, writeJson } from './values.ts';
import type {
  CompileContext,
  CompileError,
  CompileRequest,
  CompileResult,
  GenerationAlias,
  ObjectInfo,
  OnEmpty,
  Upload,
  Workflow,
} from './types.ts';

export interface ResolvedEntry {
  node: string;
  field: string;
  on_empty?: OnEmpty;
}

type Failed = { ok: false; error: CompileError };

/**
 * The mapping a request goes through: the suggestions, minus those on a field an explicit
 * entry also maps, overridden by the explicit entries; node refs resolved to ids.
 */
export function effectiveMapping(
  alias: GenerationAlias,
  objectInfo?: ObjectInfo,
): { ok: true; mapping: Record<string, ResolvedEntry> } | Failed {
  const explicit: Record<string, ResolvedEntry> = {};
  for (const [param, entry] of Object.entries(alias.mapping ?? {})) {
    const node = resolveNode(alias.workflow, entry.node);
    if (!node) return aliasFault(`mapping.${param}.node`, `no node '${entry.node}' in the workflow`);
    explicit[param] = { node, field: entry.field, ...(entry.on_empty ? { on_empty: entry.on_empty } : {}) };
  }
  const taken = new Set(Object.values(explicit).map((e) => pinKey(e.node, e.field)));
  const mapping: Record<string, ResolvedEntry> = {};
  for (const [param, entry] of Object.entries(suggestMapping(alias.workflow, objectInfo))) {
    if (!taken.has(pinKey(entry.node, entry.field))) mapping[param] = entry;
  }
  return { ok: true, mapping: { ...mapping, ...explicit } };
}

/**
 * The params of `mapping` a request may send a file for: those whose node and field take a
 * file (isFileInput, with the field's object_info declaration when known).
 */
export function fileParamsOf(
  mapping: Record<string, ResolvedEntry>,
  workflow: Workflow,
  objectInfo?: ObjectInfo,
): Set<string> {
  const out = new Set<string>();
  for (const [param, { node, field }] of Object.entries(mapping)) {
    const classType = workflow[node]?.class_type;
    if (classType === undefined) continue;
    const info = classInfo(objectInfo, classType);
    if (isFileInput(classType, info ? inputDecl(info, field) : undefined)) out.add(param);
  }
  return out;
}

/** The kind of media each file param of `mapping` loads (fileKindOf), where its node tells. */
export function fileKindsOf(
  mapping: Record<string, ResolvedEntry>,
  workflow: Workflow,
  objectInfo?: ObjectInfo,
): Map<string, FileKind> {
  const out = new Map<string, FileKind>();
  for (const [param, { node, field }] of Object.entries(mapping)) {
    const classType = workflow[node]?.class_type;
    if (classType === undefined) continue;
    const info = classInfo(objectInfo, classType);
    const kind = fileKindOf(classType, info ? inputDecl(info, field) : undefined);
    if (kind) out.set(param, kind);
  }
  return out;
}

export function compile(request: CompileRequest, alias: GenerationAlias, ctx: CompileContext): CompileResult {
  const objectInfo = ctx.objectInfo;
  const prompt: Workflow = structuredClone(alias.workflow);
  const decl = (node: string, field: string): InputDecl | undefined => {
    const info = classInfo(objectInfo, prompt[node].class_type);
    return info ? inputDecl(info, field) : undefined;
  };

  const pinned = new Set<string>();
  for (const [i, pin] of (alias.fixed ?? []).entries()) {
    const node = resolveNode(prompt, pin.node);
    if (!node) return aliasFault(`fixed[${i}].node`, `no node '${pin.node}' in the workflow`);
    const coerced = coerceValue(pin.value, decl(node, pin.field), prompt[node].inputs[pin.field]);
    if (!coerced.ok)
      return aliasFault(`fixed[${i}].value`, `${prompt[node].class_type}.${pin.field} ${coerced.message}`);
    prompt[node].inputs[pin.field] = coerced.value;
    pinned.add(pinKey(node, pin.field));
  }

  const resolved = effectiveMapping(alias, objectInfo);
  if (!resolved.ok) return resolved;
  const mapping = resolved.mapping;

  const params = normalizeParams(request, mapping);
  if (!params.ok) return params;
  const loras = loraRequests(params.values);
  if (!loras.ok) return loras;
  const values = Object.fromEntries(
    Object.entries(params.values).filter(([k]) => !isLoraParam(k) && !isStrengthParam(k)),
  );
  const unknown = Object.keys(values).filter((k) => !Object.hasOwn(mapping, k));
  if (unknown.length > 0) {
    const known = Object.keys(mapping).sort().join(', ') || 'none';
    return badRequest(unknown[0], `unknown parameter '${unknown[0]}'; this model takes: ${known}`);
  }

  const uploads: Upload[] = [];
  const disabled: Array<{ param: string; node: string }> = [];
  let seed: string | undefined;
  for (const [param, entry] of Object.entries(mapping)) {
    const { node, field } = entry;
    const isPinned = pinned.has(pinKey(node, field));
    const provided = Object.hasOwn(values, param) || Object.hasOwn(ctx.images ?? {}, param);
    if (provided && isPinned) return badRequest(param, `'${param}' is fixed for this model and cannot be set`);

    // a file for an input that does not load one would put the upload's name in a prompt text or a number
    if (Object.hasOwn(ctx.images ?? {}, param) && !isFileInput(prompt[node].class_type, decl(node, field))) {
      return badRequest(param, `'${param}' is not a file input`);
    }
    // an image slot, or any input the request sends a file for (audio, video, mesh loaders)
    if ((isImageLoaderClass(prompt[node].class_type) || Object.hasOwn(ctx.images ?? {}, param)) && !isPinned) {
      const image = ctx.images?.[param];
      if (image) {
        const name = `gw_${safeName(ctx.jobId)}_${param}.${safeName(image.ext).toLowerCase() || 'png'}`;
        prompt[node].inputs[field] = name;
        uploads.push({ param, node, field, name });
      } else if (Object.hasOwn(values, param)) {
        return badRequest(param, `'${param}' must be sent as an image file`);
      } else {
        const onEmpty = entry.on_empty ?? 'placeholder';
        // never leave the workflow's own file: it is whatever the author last had open
        if (onEmpty === 'required') return badRequest(param, `'${param}' is required: send an image`);
        if (onEmpty === 'disable') disabled.push({ param, node });
        else {
          prompt[node].inputs[field] = PLACEHOLDER_IMAGE_NAME;
          uploads.push({ param, node, field, name: PLACEHOLDER_IMAGE_NAME, placeholder: true });
        }
      }
      continue;
    }

    if (Object.hasOwn(values, param)) {
      const coerced = coerceValue(values[param], decl(node, field), prompt[node].inputs[field]);
      if (!coerced.ok) return badRequest(param, `'${param}' ${coerced.message}`);
      prompt[node].inputs[field] = coerced.value;
    } else if (param === 'seed' && !isPinned) {
      prompt[node].inputs[field] = randomSeed(ctx.random ?? Math.random, decl(node, field));
    }
    if (param === 'seed') seed = String(prompt[node].inputs[field]);
  }

  const filled = applyLoras(prompt, loras.loras, pinned, objectInfo);
  if (!filled.ok) return filled;

  const edit: GraphEdit = { prompt, objectInfo, removed: [], bypassed: [], notes: new Set() };
  const output = alias.output === undefined ? undefined : resolveNode(alias.workflow, alias.output);
  if (alias.output !== undefined && !output) return aliasFault('output', `no node '${alias.output}' in the workflow`);
  const wanted = output ? [output] : outputNodes(prompt, objectInfo);
  const survivors = () => wanted.filter((id) => Object.hasOwn(prompt, id));

  for (const slot of disabled) {
    removeWithDependents(edit, [slot.node]);
    if (survivors().length === 0) {
      return badRequest(
        slot.param,
        `'${slot.param}' is needed by this model's output (${wanted.join(', ')}): send an image`,
      );
    }
  }
  for (const [i, ref] of (alias.bypass ?? []).entries()) {
    const node = resolveNode(alias.workflow, ref);
    if (!node) return aliasFault(`bypass[${i}]`, `no node '${ref}' in the workflow`);
    bypassNode(edit, node);
  }
  for (const node of filled.unusedCoreNodes) bypassNode(edit, node);
  if (survivors().length === 0)
    return aliasFault(
      'bypass',
      `bypassing ${edit.bypassed.join(', ')} removes every output node (${wanted.join(', ')})`,
    );

  return {
    ok: true,
    prompt,
    promptJson: writeJson(prompt),
    ...(seed !== undefined ? { seed } : {}),
    removed: sortedIds(edit.removed),
    bypassed: edit.bypassed,
    outputs: output ? [output] : outputNodes(prompt, objectInfo),
    uploads,
    notes: [...edit.notes],
  };
}

/**
 * Drops absent values, refuses lists and objects (a two-element list would be read as a link),
 * and expands the convenience keys: `size` ("1024x768") → width/height, `n` → batch.
 */
function normalizeParams(
  request: CompileRequest,
  mapping: Record<string, ResolvedEntry>,
): { ok: true; values: Record<string, unknown> } | Failed {
  const values: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(request)) {
    if (value === undefined || value === null) continue;
    if (!isScalar(value)) return badRequest(key, `'${key}' must be a single value, not a list or an object`);
    values[key] = value;
  }
  if (Object.hasOwn(values, 'size')) {
    const size = values.size;
    delete values.size;
    if (size !== 'auto') {
      const m = typeof size === 'string' ? /^\s*(\d+)\s*[x×]\s*(\d+)\s*$/.exec(size) : null;
      if (!m) return badRequest('size', `'size' must look like 1024x768`);
      if (Object.hasOwn(values, 'width') || Object.hasOwn(values, 'height'))
        return badRequest('size', 'give either size or width/height, not both');
      values.width = Number(m[1]);
      values.height = Number(m[2]);
    }
  }
  if (Object.hasOwn(values, 'n')) {
    const n = values.n;
    delete values.n;
    if (Object.hasOwn(values, 'batch') && String(values.batch) !== String(n))
      return badRequest('n', 'give either n or batch, not both');
    values.batch = n;
  }
  // one image per request is what a workflow without a batch size makes: n=1 asks for exactly that
  if (Object.hasOwn(values, 'batch') && !Object.hasOwn(mapping, 'batch')) {
    if (String(values.batch) !== '1') return badRequest('n', 'this model makes one result per request');
    delete values.batch;
  }
  return { ok: true, values };
}

/** A seed within the input's bounds and within 2^53 (so it is exact as a number everywhere). */
function randomSeed(random: () => number, decl: InputDecl | undefined): number {
  const min = typeof decl?.options.min === 'number' ? Math.max(0, decl.options.min) : 0;
  const max =
    typeof decl?.options.max === 'number'
      ? Math.min(Number.MAX_SAFE_INTEGER, decl.options.max)
      : Number.MAX_SAFE_INTEGER;
  return min + Math.floor(random() * (max - min + 1));
}

function safeName(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, '');
}

function badRequest(param: string, message: string): Failed {
  return { ok: false, error: { status: 400, message, param } };
}

function aliasFault(param: string, message: string): Failed {
  return { ok: false, error: { status: 500, message: `alias misconfigured: ${message}`, param } };
}
