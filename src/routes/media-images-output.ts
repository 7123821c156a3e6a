/**
 * The images of an Images API answer (routes/media-images.ts): `response_format` and
 * `output_format` / `output_compression` as asked, each result as a URL on this gateway or as
 * its bytes (converted with sharp when another format was asked for).
 */
import type { FastifyRequest } from 'fastify';
import { badRequest, GatewayError } from '../errors.ts';
import { THUMB_MAX } from '../media/jobs/artifacts.ts';
import { loadSharp } from '../media/sharp-lazy.ts';
import type { JobResultView, MediaCaller } from '../media/service-types.ts';
import type { MediaRouteDeps } from './media-caller.ts';

const OUTPUT_FORMATS = { png: 'image/png', webp: 'image/webp', jpeg: 'image/jpeg' } as const;
export type OutputFormat = keyof typeof OUTPUT_FORMATS;

export function responseFormat(value: unknown): 'url' | 'b64_json' {
  if (value === undefined || value === null) return 'b64_json';
  if (value === 'url' || value === 'b64_json') return value;
  throw badRequest("`response_format` must be 'url' or 'b64_json'.", 'response_format', 'invalid_response_format');
}

export interface OutputWish {
  format: OutputFormat;
  /** 0–100 as OpenAI means it: the encoder's quality (100 = best, lower = smaller). */
  compression?: number;
}

export function outputFormat(format: unknown, compression: unknown): OutputWish | undefined {
  let c: number | undefined;
  if (compression !== undefined && compression !== null) {
    if (typeof compression !== 'number' || !Number.isInteger(compression) || compression < 0 || compression > 100) {
      throw badRequest(
        '`output_compression` must be an integer from 0 to 100.',
        'output_compression',
        'invalid_output_compression',
      );
    }
    c = compression;
  }
  if (format === undefined || format === null) {
    if (c !== undefined)
      throw badRequest(
        '`output_compression` needs an `output_format` (webp or jpeg).',
        'output_compression',
        'invalid_output_compression',
      );
    return undefined;
  }
  const f = format === 'jpg' ? 'jpeg' : format;
  if (typeof f !== 'string' || !Object.hasOwn(OUTPUT_FORMATS, f))
    throw badRequest("`output_format` must be 'png', 'webp' or 'jpeg'.", 'output_format', 'invalid_output_format');
  return { format: f as OutputFormat, compression: c };
}

/**
 * A result's absolute URL (it needs the caller's key). Asked for another format, an image
 * result's URL asks for that format at its own size (the thumbnail route, which never
 * enlarges; past THUMB_MAX pixels it is capped there); `output_compression` has no URL form.
 */
export function resultUrl(req: FastifyRequest, result: JobResultView, output?: OutputWish): string {
  const base = `${req.protocol}://${req.host}${result.url}`;
  if (!output || result.kind !== 'image' || result.mime === OUTPUT_FORMATS[output.format]) return base;
  const w = Math.min(result.width ?? THUMB_MAX, THUMB_MAX);
  const h = Math.min(result.height ?? THUMB_MAX, THUMB_MAX);
  return `${base}?format=${output.format}&w=${w}&h=${h}`;
}

/** A result's bytes, converted with sharp when another image format (or a compression) was asked for. */
export async function resultBytes(
  deps: MediaRouteDeps,
  caller: MediaCaller,
  id: string,
  result: JobResultView,
  output?: OutputWish,
): Promise<Buffer> {
  const file = await deps.media().result(id, result.n, caller);
  if (!file)
    throw new GatewayError({
      status: 500,
      code: 'result_missing',
      message: `Result ${result.n} of job ${id} is missing.`,
    });
  if (!output || result.kind !== 'image') return file.bytes;
  if (file.mime === OUTPUT_FORMATS[output.format] && output.compression === undefined) return file.bytes;
  const quality = Math.max(1, output.compression ?? 90);
  const img = (await loadSharp())(file.bytes);
  switch (output.format) {
    case 'png':
      return img.png().toBuffer();
    case 'webp':
      return img.webp({ quality }).toBuffer();
    case 'jpeg':
      return img.flatten({ background: '#ffffff' }).jpeg({ quality }).toBuffer();
  }
}
