/**
 * Turning what a client sends for a file input into bytes: a base64 string (whitespace
 * tolerated, standard or URL-safe alphabet), a `data:<mime>;base64,…` URI, or an http(s) URL
 * (fetched by fetch.ts). Anything else is a 400 naming the param; more than the cap a
 * 413. The MIME type is sniffed from the bytes (magic numbers); a data URI's declared type is
 * used only when sniffing finds nothing. File extensions come from artifacts.ts's `extOf`.
 */
import { isObject } from '../../json.ts';
import type { FileKind } from '../compiler/index.ts';
import type { MediaFile } from '../service-types.ts';
import { byteBudget, DEFAULT_MAX_BYTES, fetchRef, type ByteBudget, type FetchOptions } from './fetch.ts';
import { formatBytes, MediaInputError, tooLarge } from './errors.ts';
import { isAvi, sniffMime } from './sniff.ts';

export { MediaInputError } from './errors.ts';
export type { FetchOptions } from './fetch.ts';

/** How many entries one `images` / `files` map may have. */
export const MAX_FILE_ENTRIES = 32;

const OCTET = 'application/octet-stream';

/** Sniffed types a file input of each kind loads besides `<kind>/*` (animated images as video). */
const ALSO_ACCEPTED: Record<FileKind, ReadonlySet<string>> = {
  image: new Set(),
  audio: new Set(['video/mp4', 'video/webm', 'video/quicktime']),
  video: new Set(['image/gif', 'image/webp']),
};

/**
 * Refuses (400 `invalid_file`, naming `param`) a file whose bytes are not the `kind` of media
 * its input loads, sniffed from the bytes whatever the client or the server it came from
 * declared: a text page fetched for an image slot is never stored, sent to a box nor served back.
 */
export function requireKind(file: MediaFile, kind: FileKind, param: string): void {
  const sniffed = sniffMime(file.bytes);
  if (sniffed && (sniffed.startsWith(`${kind}/`) || ALSO_ACCEPTED[kind].has(sniffed))) return;
  // AVI is not sniffed (nothing here makes or shows one), yet video loaders read it
  if (kind === 'video' && isAvi(file.bytes)) return;
  const shows = sniffed ? `its bytes are ${sniffed}` : `its bytes show no known ${kind} format`;
  const article = kind === 'image' || kind === 'audio' ? 'an' : 'a';
  throw new MediaInputError(400, param, 'invalid_file', `${param} must be ${article} ${kind} file; ${shows}.`);
}

// ---------------------------------------------------------------------------------------------
// One value

/**
 * One client value → a file. `param` names it in errors (`images.init`, `files.audio`).
 * URLs are fetched with `opts` (http(s) only, the private-address rule, size and time caps).
 */
export async function decodeMediaValue(value: unknown, param: string, opts: FetchOptions): Promise<MediaFile> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  if (typeof value !== 'string') {
    throw invalid(param, `${param} must be a string (base64, a data: URI or an http(s) URL), not ${describe(value)}`);
  }
  const text = value.trim();
  if (text === '') throw invalid(param, `${param} is empty; send base64, a data: URI or an http(s) URL`);
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(text.slice(0, 40))?.[1]?.toLowerCase();
  if (scheme === 'http' || scheme === 'https') return fetchRef(text, opts, param);
  if (scheme === 'data') return decodeDataUri(text, param, maxBytes, opts.budget);
  if (scheme !== undefined) {
    throw new MediaInputError(
      400,
      param,
      'unsupported_url',
      `${param} is a ${scheme}: URL; send base64, a data: URI or an http(s) URL`,
    );
  }
  const bytes = decodeBase64(text, param, maxBytes, opts.budget);
  return { bytes, mime: sniffMime(bytes) ?? OCTET };
}

function decodeDataUri(text: string, param: string, maxBytes: number, budget: ByteBudget | undefined): MediaFile {
  const comma = text.indexOf(',');
  if (comma < 0) throw invalid(param, `${param} is not a valid data: URI (no comma before the data)`);
  const meta = text
    .slice(5, comma)
    .split(';')
    .map((s) => s.trim());
  if (meta.length < 2 || meta[meta.length - 1].toLowerCase() !== 'base64') {
    throw invalid(param, `${param} is a data: URI that is not base64; send data:<mime>;base64,<data>`);
  }
  const declared = meta[0].toLowerCase();
  const bytes = decodeBase64(text.slice(comma + 1), param, maxBytes, budget);
  const fallback = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(declared) ? declared : OCTET;
  return { bytes, mime: sniffMime(bytes) ?? fallback };
}

const BASE64_RE = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Base64 (standard or URL-safe, padded or not, whitespace anywhere) → bytes; the size is checked before decoding. */
function decodeBase64(input: string, param: string, maxBytes: number, budget: ByteBudget | undefined): Buffer {
  const text = /\s/.test(input) ? input.replace(/\s+/g, '') : input;
  if (text === '') throw invalid(param, `${param} holds no data`);
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const chars = text.length - padding;
  if (!BASE64_RE.test(text) || chars % 4 === 1 || (padding > 0 && text.length % 4 !== 0)) {
    throw invalid(param, `${param} is not valid base64, a data: URI or an http(s) URL`);
  }
  const size = Math.floor((chars * 3) / 4);
  if (size > maxBytes) throw tooLarge(param, maxBytes);
  budget?.take(size);
  return Buffer.from(text, 'base64');
}

function invalid(param: string, message: string): MediaInputError {
  return new MediaInputError(400, param, 'invalid_media_value', message);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

// ---------------------------------------------------------------------------------------------
// A map of them

/**
 * The `images` / `files` map of a request: `{param: value}` → `{param: file}`. Absent
 * (undefined or null) is an empty map. When `allowedParams` is given, every key must be in it
 * (checked before anything is decoded or fetched). The values are decoded concurrently (the
 * first failure cancels the fetches still running); each is capped at `opts.maxBytes`, all
 * together at four times that, and every byte counts against `opts.budget` too (413).
 */
export async function decodeFileMap(
  map: unknown,
  allowedParams: ReadonlySet<string> | undefined,
  field: 'images' | 'files',
  opts: FetchOptions,
): Promise<Record<string, MediaFile>> {
  if (map === undefined || map === null) return {};
  if (!isObject(map)) {
    throw new MediaInputError(
      400,
      field,
      'invalid_media_value',
      `'${field}' must be an object of input name → file (base64, a data: URI or an http(s) URL), not ${describe(map)}`,
    );
  }
  const entries = Object.entries(map);
  if (entries.length > MAX_FILE_ENTRIES) {
    throw new MediaInputError(
      400,
      field,
      'invalid_media_value',
      `'${field}' has ${entries.length} entries; at most ${MAX_FILE_ENTRIES} are accepted`,
    );
  }
  if (allowedParams) {
    for (const [key] of entries) {
      if (!allowedParams.has(key)) {
        const takes = allowedParams.size
          ? `its file inputs: ${[...allowedParams].sort().join(', ')}`
          : `it takes no ${field}`;
        throw new MediaInputError(
          400,
          `${field}.${clip(key)}`,
          'invalid_media_value',
          `'${clip(key)}' is not a file input of this model; ${takes}`,
        );
      }
    }
  }
  const totalCap = (opts.maxBytes ?? DEFAULT_MAX_BYTES) * 4;
  const budget = byteBudget(
    totalCap,
    () =>
      new MediaInputError(
        413,
        field,
        'files_too_large',
        `the ${field} of this request are larger than ${formatBytes(totalCap)} together`,
      ),
    opts.budget,
  );
  const controller = new AbortController();
  const outer = opts.signal;
  const onOuterAbort = () => controller.abort(outer!.reason);
  if (outer?.aborted) onOuterAbort();
  else outer?.addEventListener('abort', onOuterAbort, { once: true });
  const each = { ...opts, budget, signal: controller.signal };
  try {
    const files = await Promise.all(
      entries.map(async ([key, value]) => {
        try {
          return [key, await decodeMediaValue(value, `${field}.${key}`, each)] as const;
        } catch (err) {
          controller.abort(err);
          throw err;
        }
      }),
    );
    // fromEntries defines own properties: a `__proto__` key stays a key
    return Object.fromEntries(files);
  } finally {
    outer?.removeEventListener('abort', onOuterAbort);
  }
}

function clip(text: string): string {
  return text.length > 100 ? `${text.slice(0, 99)}…` : text;
}
