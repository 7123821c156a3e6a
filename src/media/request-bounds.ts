/**
 * The size bounds of a generation, checked on the compiled prompt (what the box would really
 * be asked for, the workflow's own values included): the mapped `width` and `height` must be
 * positive and together at most the alias's `max_pixels`, the mapped `batch` (`n`) from 1 to
 * its `max_n`. A refusal is a 400 naming the param the request set (`size` or `width` /
 * `height`; `n` or `batch`). Pure.
 */
import { IMAGE_MODEL_DEFAULTS } from '../config/defaults.ts';
import type { ImageModelEntry } from '../config/types.ts';
import { badRequest, type GatewayError } from '../errors.ts';
import type { ResolvedEntry, Workflow } from './compiler/index.ts';

export interface GenerationLimits {
  maxPixels: number;
  maxN: number;
}

/** An alias's limits: the strictest of its entries' (each box says what it takes); defaults where none is set. */
export function aliasLimits(entries: readonly Pick<ImageModelEntry, 'max_pixels' | 'max_n'>[]): GenerationLimits {
  const strictest = (values: (number | undefined)[], fallback: number) => {
    const set = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0);
    return set.length ? Math.min(...set) : fallback;
  };
  return {
    maxPixels: strictest(
      entries.map((e) => e.max_pixels),
      IMAGE_MODEL_DEFAULTS.max_pixels,
    ),
    maxN: strictest(
      entries.map((e) => e.max_n),
      IMAGE_MODEL_DEFAULTS.max_n,
    ),
  };
}

/**
 * Throws the 400 of the first bound the compiled `prompt` breaks. `params` are the request's
 * (to name what it set), `mapping` the alias's.
 */
export function checkBounds(
  alias: string,
  params: Record<string, unknown>,
  prompt: Workflow,
  mapping: Record<string, ResolvedEntry>,
  limits: GenerationLimits,
): void {
  const value = (param: string): number | undefined => {
    const entry = Object.hasOwn(mapping, param) ? mapping[param] : undefined;
    const v = entry ? prompt[entry.node]?.inputs[entry.field] : undefined;
    if (typeof v === 'number') return v;
    if (typeof v === 'bigint') return Number(v);
    if (typeof v === 'string' && /^\s*-?\d+(?:\.\d+)?\s*$/.test(v)) return Number(v);
    return undefined;
  };
  const named = (param: string, shorthand: string) => (Object.hasOwn(params, shorthand) ? shorthand : param);
  const width = value('width');
  const height = value('height');
  for (const [param, v] of [
    ['width', width],
    ['height', height],
  ] as const) {
    if (v !== undefined && !(v > 0)) {
      throw refused(named(param, 'size'), `'${param}' must be a positive number of pixels, not ${v}`);
    }
  }
  if (width !== undefined && height !== undefined && width * height > limits.maxPixels) {
    const param = Object.hasOwn(params, 'size') ? 'size' : Object.hasOwn(params, 'width') ? 'width' : 'height';
    const most = grouped(limits.maxPixels);
    const asked = grouped(width * height);
    throw refused(param, `${width}x${height} is ${asked} pixels; ${alias} makes at most ${most} (max_pixels)`);
  }
  const batch = value('batch');
  if (batch !== undefined && (!Number.isInteger(batch) || batch < 1 || batch > limits.maxN)) {
    const param = named('batch', 'n');
    throw refused(param, `'${param}' must be an integer from 1 to ${limits.maxN} (max_n of ${alias}), not ${batch}`);
  }
}

function refused(param: string, message: string): GatewayError {
  return badRequest(message, param, 'invalid_parameter');
}

function grouped(n: number): string {
  return n.toLocaleString('en-US');
}
